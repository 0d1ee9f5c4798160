/**
 * The command palette (ctrl+p): every slash command, filtered as you type; enter runs it (or,
 * for a command that takes arguments, puts it in the prompt to complete).
 * @module
 */
import { Text } from 'ink';
import { COMMANDS, type SlashCommand } from '../../commands';
import { Frame } from '../frame';
import { SelectList } from '../select-list';

export interface CommandPaletteProps {
  height: number;
  isActive?: boolean;
  onRun(command: SlashCommand): void;
  onCancel(): void;
}

export function CommandPalette({ height, isActive, onRun, onCancel }: CommandPaletteProps) {
  return (
    <Frame title="Commands" hint="type to filter · enter run · esc close">
      <SelectList
        items={COMMANDS}
        height={Math.max(3, height - 5)}
        isActive={isActive}
        keyOf={(c) => c.name}
        filterText={(c) => `${c.name} ${c.aliases?.join(' ') ?? ''} ${c.description}`}
        onSelect={onRun}
        onCancel={onCancel}
        renderItem={(c) => (
          <Text wrap="truncate-end">
            /{c.name}
            {c.args ? <Text dimColor> {c.args}</Text> : null}
            <Text dimColor>{`  ${c.description}`}</Text>
          </Text>
        )}
      />
    </Frame>
  );
}
