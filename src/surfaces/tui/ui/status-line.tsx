/**
 * The status line: session title, model, run state, queue, context use, tokens and cost.
 * @module
 */
import { Box, Text } from 'ink';
import type { TranscriptState } from '../state/transcript';

export function StatusLine({ state, target }: { state: TranscriptState; target: string }) {
  const ctx = state.context ? `ctx ${Math.round(state.context.ratio * 100)}%` : undefined;
  const tokens = `${compact(state.usage.input_tokens)}↑ ${compact(state.usage.output_tokens)}↓`;
  const parts = [
    state.model ?? state.runModel ?? state.nextModel ?? 'default model',
    ctx,
    tokens,
    `$${state.usage.cost.toFixed(state.usage.cost < 1 ? 4 : 2)}`,
    state.queue.length ? `queue ${state.queue.length}` : undefined,
    state.connection === 'reconnecting' ? 'reconnecting…' : undefined,
  ].filter(Boolean);
  const busy = state.state !== 'idle';
  return (
    <Box>
      <Box flexShrink={1} flexGrow={1}>
        <Text wrap="truncate-end">
          <Text color={busy ? 'yellow' : 'green'}>{busy ? `● ${state.state}` : '○ idle'}</Text>{' '}
          <Text bold>{state.title || (state.sessionId ? '(untitled)' : 'new session')}</Text>
          <Text dimColor>{`  ${target}`}</Text>
        </Text>
      </Box>
      <Box flexShrink={0}>
        <Text dimColor>{parts.join(' · ')}</Text>
      </Box>
    </Box>
  );
}

function compact(n: number): string {
  return n >= 1_000_000
    ? `${(n / 1_000_000).toFixed(1)}M`
    : n >= 1000
      ? `${(n / 1000).toFixed(1)}k`
      : String(n);
}
