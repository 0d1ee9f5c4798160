/**
 * A keyboard list for the dialogs: ↑/↓ (or k/j when not filtering), pgup/pgdn, enter picks,
 * esc closes, typing filters when `filterable`. Shows a window of `height` rows around the
 * selection so it fits any terminal.
 * @module
 */
import { Box, type Key, Text } from 'ink';
import { type ReactNode, useMemo, useRef, useState } from 'react';
import { useLatestInput } from './use-latest-input';

export interface SelectListProps<T> {
  items: T[];
  renderItem(item: T, selected: boolean): ReactNode;
  keyOf(item: T): string;
  onSelect(item: T): void;
  onCancel(): void;
  height: number;
  isActive?: boolean;
  /** Typing filters the list by this text. */
  filterText?: (item: T) => string;
  /** Extra keys for the selected item; return true when handled. */
  onKey?: (input: string, key: Key, item: T | undefined) => boolean;
  initialIndex?: number;
  empty?: string;
  /**
   * A details pane for the highlighted item, drawn under the list in the same render as the
   * cursor, so the pane never shows the previous row's details.
   */
  details?: (item: T | undefined) => ReactNode;
}

export function SelectList<T>(props: SelectListProps<T>) {
  const [index, setIndex] = useState(props.initialIndex ?? 0);
  const [filter, setFilter] = useState('');
  const visible = useMemo(() => {
    if (!props.filterText || !filter) return props.items;
    const f = filter.toLowerCase();
    return props.items.filter((item) => props.filterText!(item).toLowerCase().includes(f));
  }, [props.items, props.filterText, filter]);
  const selected = Math.min(index, Math.max(0, visible.length - 1));
  // Keys can arrive faster than renders (a held arrow, ↓ then enter in one read): move from the
  // latest position, not the one of the last render. useLatestInput does not cover this: both keys
  // of one read reach the same render's handler.
  const latest = useRef(selected);
  latest.current = Math.min(latest.current, Math.max(0, visible.length - 1));
  const move = (to: number) => {
    latest.current = Math.max(0, Math.min(visible.length - 1, to));
    setIndex(latest.current);
  };

  // A key right after the items arrive acts on them (use-latest-input.ts).
  useLatestInput(
    (input, key) => {
      const at = latest.current;
      if (props.onKey?.(input, key, visible[at])) return;
      if (key.escape) return props.onCancel();
      if (key.return) {
        if (visible[at] !== undefined) props.onSelect(visible[at]);
        return;
      }
      if (key.upArrow || (!props.filterText && input === 'k')) return move(at - 1);
      if (key.downArrow || (!props.filterText && input === 'j')) return move(at + 1);
      if (key.pageUp) return move(at - props.height);
      if (key.pageDown) return move(at + props.height);
      if (props.filterText) {
        if (key.backspace || key.delete) {
          setFilter((f) => f.slice(0, -1));
          move(0);
        } else if (input && !key.ctrl && !key.meta && input >= ' ') {
          setFilter((f) => f + input);
          move(0);
        }
      }
    },
    { isActive: props.isActive !== false },
  );

  const height = Math.max(1, props.height);
  const start = Math.max(0, Math.min(selected - Math.floor(height / 2), visible.length - height));
  const window = visible.slice(start, start + height);
  return (
    <Box flexDirection="column">
      {props.filterText ? <Text dimColor>{filter ? `filter: ${filter}` : 'type to filter'}</Text> : null}
      {visible.length === 0 ? <Text dimColor>{props.empty ?? '(nothing to show)'}</Text> : null}
      {window.map((item, i) => (
        <Box key={props.keyOf(item)}>
          {/* The marker keeps its width when the row is too long and gets truncated. */}
          <Box flexShrink={0}>
            <Text color={start + i === selected ? 'cyan' : undefined}>
              {start + i === selected ? '› ' : '  '}
            </Text>
          </Box>
          {props.renderItem(item, start + i === selected)}
        </Box>
      ))}
      {visible.length > height ? (
        <Text dimColor>
          {selected + 1}/{visible.length}
        </Text>
      ) : null}
      {props.details?.(visible[selected])}
    </Box>
  );
}
