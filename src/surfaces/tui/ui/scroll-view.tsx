/**
 * A scrollable block of text lines (readouts, the dashboard, help): ↑/↓/j/k by line,
 * pgup/pgdn/space by page, g/G to the ends. Only `height` lines are rendered.
 * @module
 */
import { Box, type Key, Text, useInput } from 'ink';
import { useEffect, useRef, useState } from 'react';

export interface ScrollViewProps {
  lines: string[];
  height: number;
  isActive?: boolean;
  onKey?: (input: string, key: Key) => boolean;
}

export function ScrollView({ lines, height, isActive, onKey }: ScrollViewProps) {
  const [top, setTop] = useState(0);
  const rows = Math.max(1, height);
  const maxTop = Math.max(0, lines.length - rows);
  // Ink subscribes a new handler in a passive effect after each render, so a key that arrives
  // between the screen showing new lines and that effect reaches the previous render's handler:
  // the bounds are read from a ref set during render, never from the handler's closure.
  const bounds = useRef({ maxTop, rows });
  bounds.current = { maxTop, rows };
  useEffect(() => {
    setTop((t) => Math.min(t, maxTop));
  }, [maxTop]);
  useInput(
    (input, key) => {
      if (onKey?.(input, key)) return;
      const { maxTop, rows } = bounds.current;
      if (key.upArrow || input === 'k') setTop((t) => Math.max(0, t - 1));
      else if (key.downArrow || input === 'j') setTop((t) => Math.min(maxTop, t + 1));
      else if (key.pageUp || input === 'b') setTop((t) => Math.max(0, t - rows));
      else if (key.pageDown || input === ' ' || input === 'f') setTop((t) => Math.min(maxTop, t + rows));
      else if (input === 'g' || key.home) setTop(0);
      else if (input === 'G' || key.end) setTop(maxTop);
    },
    { isActive: isActive !== false },
  );
  const shown = lines.slice(top, top + rows);
  return (
    <Box flexDirection="column">
      {shown.map((line, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: lines are positional
        <Text key={top + i} wrap="truncate-end">
          {line || ' '}
        </Text>
      ))}
      {lines.length > rows ? (
        <Text dimColor>
          lines {top + 1}–{Math.min(lines.length, top + rows)} of {lines.length} · ↑↓ pgup pgdn g G
        </Text>
      ) : null}
    </Box>
  );
}
