/**
 * The prompt: multi-line text with a cursor (the state lives in the app; keys go through
 * `editKey`). Long prompts scroll inside a few rows so the screen layout stays put; only the rows
 * shown are looked at, so a key costs the same in a long prompt as in a short one.
 * @module
 */
import { Box, Text } from 'ink';
import type { EditorState } from './editor';

export function InputBox({
  editor,
  maxRows,
  busy,
  hint,
}: {
  editor: EditorState;
  maxRows: number;
  busy: boolean;
  hint?: string;
}) {
  const { lines: shown, first, cursorLine, column } = promptWindow(editor, Math.max(1, maxRows));
  return (
    <Box flexDirection="column">
      <Box
        borderStyle="single"
        borderColor={busy ? 'yellow' : 'gray'}
        borderLeft={false}
        borderRight={false}
        flexDirection="column"
      >
        {editor.value === '' ? (
          <Text>
            <Text color="cyan">{'› '}</Text>
            <Text inverse> </Text>
            <Text dimColor>
              {busy
                ? ' a prompt now is queued · esc cancels the run'
                : ' ask anything · / for commands · ctrl+p palette'}
            </Text>
          </Text>
        ) : (
          shown.map((line, i) => {
            const index = first + i;
            const prefix = index === 0 ? '› ' : '  ';
            if (index !== cursorLine)
              return (
                <Text key={index} wrap="wrap">
                  <Text color="cyan">{prefix}</Text>
                  {line || ' '}
                </Text>
              );
            return (
              <Text key={index} wrap="wrap">
                <Text color="cyan">{prefix}</Text>
                {line.slice(0, column)}
                <Text inverse>{line[column] ?? ' '}</Text>
                {line.slice(column + 1)}
              </Text>
            );
          })
        )}
      </Box>
      {hint ? (
        <Text dimColor wrap="truncate-end">
          {hint}
        </Text>
      ) : null}
    </Box>
  );
}

/**
 * The lines of the prompt shown in `rows`: the cursor's line, the lines before it (up to `rows`
 * in all), then lines after it while there is room. Only these lines are read from the text.
 */
export function promptWindow(editor: EditorState, rows: number) {
  const { value, cursor } = editor;
  const lineStart = (end: number) => value.lastIndexOf('\n', end - 1) + 1;
  const start = lineStart(cursor);
  const nextBreak = value.indexOf('\n', cursor);
  const lines = [value.slice(start, nextBreak === -1 ? value.length : nextBreak)];
  let from = start;
  while (lines.length < rows && from > 0) {
    const prev = lineStart(from - 1);
    lines.unshift(value.slice(prev, from - 1));
    from = prev;
  }
  const before = lines.length - 1;
  let to = nextBreak;
  while (lines.length < rows && to !== -1) {
    const next = value.indexOf('\n', to + 1);
    lines.push(value.slice(to + 1, next === -1 ? value.length : next));
    to = next;
  }
  // The index of the first line shown, counted only when it is the prompt's first (the `› ` mark).
  const first = from === 0 ? 0 : 1;
  return { lines, first, cursorLine: first + before, column: cursor - start };
}

/** The prompt's line count, counted up to `max`. */
export function promptLines(value: string, max: number): number {
  let n = 1;
  for (let i = value.indexOf('\n'); i !== -1 && n < max; i = value.indexOf('\n', i + 1)) n++;
  return n;
}
