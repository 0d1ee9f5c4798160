/**
 * `/help`: keys and slash commands.
 * @module
 */
import { useInput } from 'ink';
import { COMMANDS } from '../../commands';
import { Frame } from '../frame';
import { KEYS } from '../keys';
import { ScrollView } from '../scroll-view';

export function helpLines(): string[] {
  return [
    'Keys',
    ...KEYS.map(([k, v]) => `  ${k.padEnd(38)} ${v}`),
    '',
    'Slash commands',
    ...COMMANDS.map(
      (c) =>
        `  /${`${c.name}${c.args ? ` ${c.args}` : ''}`.padEnd(36)} ${c.description}${c.aliases?.length ? ` (also /${c.aliases.join(', /')})` : ''}`,
    ),
  ];
}

export function HelpView({
  height,
  isActive,
  onClose,
}: {
  height: number;
  isActive?: boolean;
  onClose(): void;
}) {
  useInput(
    (input, key) => {
      if (key.escape || input === 'q') onClose();
    },
    { isActive: isActive !== false },
  );
  return (
    <Frame title="Help" hint="↑↓ pgup pgdn scroll · esc close">
      <ScrollView lines={helpLines()} height={Math.max(3, height - 4)} isActive={isActive} />
    </Frame>
  );
}
