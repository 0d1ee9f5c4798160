/**
 * One transcript item: the prompt, the assistant's markdown (reasoning collapsed unless shown),
 * a tool call on one line with its status and, for edits, the diff; notices.
 * @module
 */
import { Box, Text } from 'ink';
import { memo, useMemo } from 'react';
import { diffStats, renderDiff } from '../render/diff';
import { renderMarkdown } from '../render/markdown';
import type { Item, ToolItem } from '../state/transcript';
import { foldLongLines, foldPrompt, longestLine } from './wrap-lines';

export interface ItemViewProps {
  item: Item;
  showReasoning: boolean;
  /** Show only the last N lines (live area must fit the screen). */
  maxLines?: number;
  /** Diff lines shown for a tool item. */
  diffLines?: number;
  /** The terminal's width: a longer line than `LINE_ROWS` rows of it is cut (wrap-lines.ts). */
  width?: number;
}

export const ItemView = memo(function ItemView({
  item,
  showReasoning,
  maxLines,
  diffLines = 40,
  width,
}: ItemViewProps) {
  const max = longestLine(width);
  switch (item.kind) {
    case 'user':
      return (
        <Box marginTop={1}>
          <Text color="cyan" bold>
            {'› '}
          </Text>
          <Text wrap="wrap">
            {clip(foldPrompt(item.text, max), maxLines)}
            {item.queued ? <Text dimColor> (queued)</Text> : null}
          </Text>
        </Box>
      );
    case 'assistant':
      return (
        <AssistantView
          text={item.text}
          reasoning={item.reasoning}
          done={item.done}
          showReasoning={showReasoning}
          maxLines={maxLines}
          max={max}
        />
      );
    case 'tool':
      return <ToolView item={item} diffLines={diffLines} />;
    case 'notice': {
      const line = (
        <Text color={item.level === 'error' ? 'red' : item.level === 'warn' ? 'yellow' : 'gray'} wrap="wrap">
          {item.level === 'error' ? '✗ ' : item.level === 'warn' ? '! ' : '· '}
          {foldLongLines(item.text, max)}
        </Text>
      );
      if (!item.failure) return line;
      return (
        <Box flexDirection="column">
          {line}
          <Text wrap="wrap">
            <Text bold>{'  next: '}</Text>
            {item.failure.next}
            <Text dimColor>{' · /why for details'}</Text>
          </Text>
        </Box>
      );
    }
    default: {
      const never: never = item;
      return never;
    }
  }
});

function AssistantView(props: {
  text: string;
  reasoning: string;
  done: boolean;
  showReasoning: boolean;
  maxLines?: number;
  max: number;
}) {
  const rendered = useMemo(
    () => renderMarkdown(foldLongLines(props.text, props.max)),
    [props.text, props.max],
  );
  const reasoningLines = props.reasoning ? props.reasoning.trimEnd().split('\n').length : 0;
  return (
    <Box flexDirection="column" marginTop={1}>
      {props.reasoning ? (
        props.showReasoning ? (
          <Text dimColor italic wrap="wrap">
            {clip(foldLongLines(props.reasoning.trimEnd(), props.max), props.maxLines)}
          </Text>
        ) : (
          <Text dimColor>
            {props.done || props.text ? '▸' : '⋯'} thinking ({reasoningLines} line
            {reasoningLines === 1 ? '' : 's'}, ctrl+o shows)
          </Text>
        )
      ) : null}
      {rendered ? (
        <Text wrap="wrap">{clip(rendered, props.maxLines)}</Text>
      ) : !props.done && !props.reasoning ? (
        <Text dimColor>⋯</Text>
      ) : null}
    </Box>
  );
}

const ICON: Record<ToolItem['status'], [string, string]> = {
  running: ['⋯', 'yellow'],
  done: ['✓', 'green'],
  error: ['✗', 'red'],
  denied: ['⊘', 'red'],
};

function ToolView({ item, diffLines }: { item: ToolItem; diffLines: number }) {
  const [icon, color] = ICON[item.status];
  const stats = item.diff ? diffStats(item.diff) : undefined;
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-end">
        <Text color={color}>{icon}</Text> <Text bold>{item.title}</Text>
        {stats ? <Text color="green">{` +${stats.added}`}</Text> : null}
        {stats ? <Text color="red">{` -${stats.removed}`}</Text> : null}
        {item.status === 'denied' ? <Text color="red"> denied</Text> : null}
        {item.summary ? <Text dimColor>{`  ${summaryLine(item)}`}</Text> : null}
        {item.duration_ms !== undefined ? <Text dimColor>{`  ${formatMs(item.duration_ms)}`}</Text> : null}
      </Text>
      {item.files.map((f) => (
        <Text key={`${f.path}:${f.change}`} dimColor wrap="truncate-end">
          {'  '}
          {f.change === 'create' ? '+' : f.change === 'delete' ? '-' : '~'} {f.path}
        </Text>
      ))}
      {item.diff && item.status !== 'denied' ? (
        <Box flexDirection="column" marginLeft={2}>
          {renderDiff(item.diff, diffLines).map((line, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: diff lines are positional
            <Text key={i} wrap="truncate-end">
              {line}
            </Text>
          ))}
        </Box>
      ) : null}
    </Box>
  );
}

/** The summary, without the diff it may quote when the diff is shown below it anyway. */
function summaryLine(item: ToolItem): string {
  const summary = item.summary ?? '';
  if (!item.diff) return summary;
  const at = summary.search(/\s--- (a\/|\/dev\/null)/);
  return at > 0 ? summary.slice(0, at) : summary;
}

function clip(text: string, maxLines?: number): string {
  if (!maxLines) return text;
  const lines = text.split('\n');
  return lines.length <= maxLines ? text : `…\n${lines.slice(-maxLines + 1).join('\n')}`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}
