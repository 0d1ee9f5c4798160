/**
 * The prompt: multi-line text with a cursor (the state lives in the app; keys go through
 * `editKey`). Long prompts scroll inside a few rows so the screen layout stays put.
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
  const lines = editor.value.split('\n');
  let offset = 0;
  let cursorLine = 0;
  for (let i = 0; i < lines.length; i++) {
    if (editor.cursor <= offset + lines[i].length) {
      cursorLine = i;
      break;
    }
    offset += lines[i].length + 1;
  }
  const column = editor.cursor - offset;
  const rows = Math.max(1, maxRows);
  const first = Math.max(0, Math.min(cursorLine - rows + 1, lines.length - rows));
  const shown = lines.slice(first, first + rows);
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
