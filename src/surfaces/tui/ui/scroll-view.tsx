/**
 * A scrollable block of text lines (readouts, the dashboard, help): ↑/↓/j/k by line,
 * pgup/pgdn/space by page, g/G to the ends. Only `height` lines are rendered.
 * @module
 */
import { Box, type Key, Text } from 'ink';
import { useEffect, useState } from 'react';
import { useLatestInput } from './use-latest-input';

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
  useEffect(() => {
    setTop((t) => Math.min(t, maxTop));
  }, [maxTop]);
  // A key right after new lines arrive moves within them (use-latest-input.ts).
  useLatestInput(
    (input, key) => {
      if (onKey?.(input, key)) return;
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
