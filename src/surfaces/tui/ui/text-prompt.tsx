/**
 * A one-line text entry (API keys, provider ids): enter submits, esc cancels; `mask` hides what
 * is typed (a pasted key never shows on screen).
 * @module
 */
import { Box, Text, useInput } from 'ink';
import { useState } from 'react';

export interface TextPromptProps {
  label: string;
  mask?: boolean;
  isActive?: boolean;
  onSubmit(value: string): void;
  onCancel(): void;
}

export function TextPrompt({ label, mask, isActive, onSubmit, onCancel }: TextPromptProps) {
  const [value, setValue] = useState('');
  useInput(
    (input, key) => {
      if (key.escape) return onCancel();
      if (key.return) return onSubmit(value);
      if (key.backspace || key.delete) return setValue((v) => v.slice(0, -1));
      if (key.ctrl && input === 'u') return setValue('');
      if (input && !key.ctrl && !key.meta) setValue((v) => v + input.replace(/[\r\n]/g, ''));
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
