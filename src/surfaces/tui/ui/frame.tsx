/**
 * The box every dialog sits in: a title, the body, and one hint line of keys.
 * @module
 */
import { Box, Text } from 'ink';
import type { ReactNode } from 'react';

export function Frame(props: { title: string; hint?: string; children: ReactNode; color?: string }) {
  return (
    <Box flexDirection="column" borderStyle="round" borderColor={props.color ?? 'cyan'} paddingX={1}>
      <Text bold color={props.color ?? 'cyan'} wrap="truncate-end">
        {props.title}
      </Text>
      {props.children}
      {props.hint ? (
        <Text dimColor wrap="truncate-end">
          {props.hint}
        </Text>
      ) : null}
    </Box>
  );
}
