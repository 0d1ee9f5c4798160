/**
 * The status line: run state (a spinner and the elapsed time while a run works), session title,
 * workspace path, then model, context use, tokens, spend (the session's and today's, from the
 * cost ledger, against the `[budget]` limits when set) and queue. It always fits one row of the
 * terminal: the path gives way first (an ellipsis in its middle keeps its last folder), then the
 * title, and the two sides are always kept apart by a gap.
 * @module
 */
import { Box, Text } from 'ink';
import { useEffect, useRef, useState } from 'react';
import type { TranscriptState } from '../state/transcript';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK_MS = 120;

export function StatusLine({
  state,
  target,
  width = 80,
  now = Date.now,
}: {
  state: TranscriptState;
  target: string;
  width?: number;
  now?: () => number;
}) {
  const busy = state.state !== 'idle';
  const { frame, elapsedMs } = useBusyClock(busy, now);
  const ctx = state.context ? `ctx ${Math.round(state.context.ratio * 100)}%` : undefined;
  const tokens = `${compact(state.usage.input_tokens)}↑ ${compact(state.usage.output_tokens)}↓`;
  const right = [
    state.model ?? state.runModel ?? state.nextModel ?? 'default model',
    ctx,
    tokens,
    ...costLabels(state),
    state.queue.length ? `queue ${state.queue.length}` : undefined,
    state.connection === 'reconnecting' ? 'reconnecting…' : undefined,
  ]
    .filter(Boolean)
    .join(' · ');
  const label = busy
    ? `${SPINNER[frame % SPINNER.length]} ${state.state} ${formatElapsed(elapsedMs)}`
    : '○ idle';
  const layout = statusLayout({
    width,
    label,
    title: state.title || (state.sessionId ? '(untitled)' : 'new session'),
    target,
    right,
  });
  return (
    <Box width={width}>
      <Text wrap="truncate-end">
        <Text color={busy ? 'yellow' : 'green'}>{label}</Text> <Text bold>{layout.title}</Text>
        {layout.target ? <Text dimColor>{`  ${layout.target}`}</Text> : null}
        {' '.repeat(layout.gap)}
        <Text dimColor>{layout.right}</Text>
      </Text>
    </Box>
  );
}

/** Spinner frame and elapsed time, ticking only while busy (from when it became busy). */
function useBusyClock(busy: boolean, now: () => number) {
  const since = useRef<number | undefined>(undefined);
  const [tick, setTick] = useState(0);
  if (busy && since.current === undefined) since.current = now();
  if (!busy) since.current = undefined;
  useEffect(() => {
    if (!busy) return;
    const timer = setInterval(() => setTick((t) => t + 1), TICK_MS);
    return () => clearInterval(timer);
  }, [busy]);
  return { frame: tick, elapsedMs: since.current === undefined ? 0 : now() - since.current };
}

export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60
    ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s`
    : `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

export interface StatusLayout {
  title: string;
  target: string;
  /** Spaces between the left side and the right one (at least 2). */
  gap: number;
  right: string;
}

/**
 * Fits `label title  target` and `right` into `width` columns with at least two spaces between
 * them: the path shrinks first (middle ellipsis, at least a few characters or gone), then the
 * title (end ellipsis), then the right side.
 */
export function statusLayout(input: {
  width: number;
  label: string;
  title: string;
  target: string;
  right: string;
}): StatusLayout {
  const MIN_GAP = 2;
  let right = input.right;
  const fixed = input.label.length + 1;
  let room = input.width - fixed - MIN_GAP - right.length;
  let title = input.title;
  if (room < Math.min(title.length, 8)) {
    // Not even the title fits: the right side gives way (end ellipsis), keeping a short title.
    const keep = Math.max(0, input.width - fixed - MIN_GAP - Math.min(title.length, 8));
    right = ellipsisEnd(right, keep);
    room = input.width - fixed - MIN_GAP - right.length;
  }
  title = ellipsisEnd(title, Math.max(0, room));
  let target = '';
  const pathRoom = room - title.length - 2;
  if (input.target && pathRoom >= 6) target = ellipsisMiddle(input.target, pathRoom);
  const used = fixed + title.length + (target ? target.length + 2 : 0) + right.length;
  return { title, target, gap: Math.max(MIN_GAP, input.width - used), right };
}

function ellipsisEnd(text: string, max: number): string {
  if (text.length <= max) return text;
  return max <= 1 ? '' : `${text.slice(0, max - 1)}…`;
}

/** Keeps the start and, mostly, the end of a path: `/work/…/my-project`. */
function ellipsisMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = Math.ceil((max - 1) * 0.7);
  const head = max - 1 - tail;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}

/**
 * The session's spend and today's, from the cost ledger when the server reported it (every model
 * call, titles and compaction included), else the run totals counted from events.
 */
export function costLabels(state: Pick<TranscriptState, 'usage' | 'spend'>): string[] {
  const spend = state.spend;
  if (!spend) return [usd(state.usage.cost)];
  const session = `${usd(Math.max(spend.session, state.usage.cost))}${spend.session_limit !== undefined ? `/${usd(spend.session_limit)}` : ''}`;
  const today = `today ${usd(spend.today)}${spend.daily_limit !== undefined ? `/${usd(spend.daily_limit)}` : ''}`;
  return [session, today];
}

function usd(n: number): string {
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

function compact(n: number): string {
  return n >= 1_000_000
    ? `${(n / 1_000_000).toFixed(1)}M`
    : n >= 1000
      ? `${(n / 1000).toFixed(1)}k`
      : String(n);
}
