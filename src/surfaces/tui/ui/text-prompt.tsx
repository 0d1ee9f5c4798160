/**
 * A one-line text entry (API keys, provider ids): enter submits, esc cancels; `mask` hides what
 * is typed (a pasted key never shows on screen).
 * @module
 */
import { Box, Text } from 'ink';
import { useRef, useState } from 'react';
import { useLatestInput } from './use-latest-input';

export interface TextPromptProps {
  label: string;
  mask?: boolean;
  isActive?: boolean;
  onSubmit(value: string): void;
  onCancel(): void;
}

export function TextPrompt({ label, mask, isActive, onSubmit, onCancel }: TextPromptProps) {
  const [value, setValue] = useState('');
  // Keys can arrive faster than renders (several keys of one read reach the same render's
  // handler, which useLatestInput does not change): the ref is the truth between two renders.
  const current = useRef('');
  const set = (next: string) => {
    current.current = next;
    setValue(next);
  };
  useLatestInput(
    (input, key) => {
      if (key.escape) return onCancel();
      if (key.return) return onSubmit(current.current);
      if (key.backspace || key.delete) return set(current.current.slice(0, -1));
      if (key.ctrl && input === 'u') return set('');
      if (!input || key.ctrl || key.meta) return;
      const cr = input.search(/[\r\n]/);
      if (cr === -1) return set(current.current + input);
      // A paste or fast typing that ends with enter: take the line, then submit.
      set(current.current + input.slice(0, cr));
      onSubmit(current.current);
    },
    { isActive: isActive !== false },
  );
  const shown = mask ? '•'.repeat(Math.min(value.length, 40)) : value;
  return (
    <Box>
      <Text>{label} </Text>
      <Text color="cyan">{shown}</Text>
      <Text inverse> </Text>
    </Box>
  );
}
