/**
 * `/help`: keys and slash commands.
 * @module
 */
import { useStdout } from 'ink';
import { COMMANDS } from '../../commands';
import { Frame } from '../frame';
import { KEYS } from '../keys';
import { ScrollView } from '../scroll-view';
import { useLatestInput } from '../use-latest-input';
import { columnLines } from '../wrap-lines';

/** Keys and commands in `width` columns; descriptions wrap instead of being cut. */
export function helpLines(width = 100): string[] {
  return [
    'Keys',
    ...columnLines(KEYS, width),
    '',
    'Slash commands',
    ...columnLines(
      COMMANDS.map((c) => [
        `/${c.name}${c.args ? ` ${c.args}` : ''}`,
        `${c.description}${c.aliases?.length ? ` (also /${c.aliases.join(', /')})` : ''}`,
      ]),
      width,
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
  useLatestInput(
    (input, key) => {
      if (key.escape || input === 'q') onClose();
    },
    { isActive: isActive !== false },
  );
  const { stdout } = useStdout();
  // Inside the frame: its border and padding take four columns.
  const width = Math.max(20, (stdout.columns || 80) - 4);
  return (
    <Frame title="Help" hint="↑↓ pgup pgdn scroll · esc close">
      <ScrollView lines={helpLines(width)} height={Math.max(3, height - 5)} isActive={isActive} />
    </Frame>
  );
}
