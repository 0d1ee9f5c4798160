/**
 * The transcript as the TUI shows it: prompts, the assistant's markdown with its reasoning
 * collapsed, one line per tool call (status, title, +/- counts, duration) with the files it
 * changed and its diff, and notices. The list follows the bottom while you are there.
 * @module
 */
import { memo } from 'preact/compat';
import { useEffect, useRef } from 'preact/hooks';
import { safeTerminalText } from '../../../../util/terminal-text';
import type { AssistantItem, Item, ToolItem, TranscriptState } from '../../../tui/state/transcript';
import { parseDiff } from '../diff';
import { Markdown } from '../markdown';
import { formatMs, outsideText } from './common';
import { DiffView } from './diff-view';

export function Transcript({ state }: { state: TranscriptState }) {
  const end = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const onScroll = () => {
      pinned.current = innerHeight + scrollY >= document.documentElement.scrollHeight - 120;
    };
    addEventListener('scroll', onScroll, { passive: true });
    return () => removeEventListener('scroll', onScroll);
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: follow new items and streamed text
  useEffect(() => {
    if (pinned.current) end.current?.scrollIntoView({ block: 'end' });
  }, [state.items, state.permissions]);
  return (
    <section class="transcript" aria-label="Transcript" aria-live="polite" aria-busy={state.state !== 'idle'}>
      {state.items.length === 0 ? <p class="empty">No messages yet. Write a prompt below.</p> : null}
      {state.items.map((item) => (
        <ItemView key={item.key} item={item} />
      ))}
      {state.state !== 'idle' ? (
        <p class="working" role="status">
          <span class="spinner" aria-hidden="true" /> {state.state}…
        </p>
      ) : null}
      <div ref={end} />
    </section>
  );
}

const ItemView = memo(function ItemView({ item }: { item: Item }) {
  switch (item.kind) {
    case 'user':
      return (
        <div class="item user">
          <span class="who" aria-hidden="true">
            ›
          </span>
          <span class="sr-only">You:</span>
          <div class="text">
            {item.text}
            {item.queued ? <span class="muted"> (queued)</span> : null}
          </div>
        </div>
      );
    case 'assistant':
      return <AssistantView item={item} />;
    case 'tool':
      return <ToolView item={item} />;
    case 'notice':
      return (
        <div class={`item notice ${item.level}`} role={item.level === 'error' ? 'alert' : undefined}>
          <p>
            {item.level === 'error' ? '✗ ' : item.level === 'warn' ? '! ' : '· '}
            {item.text}
          </p>
          {item.failure ? (
            <>
              <p class="next">
                <strong>Next:</strong> {item.failure.next}
              </p>
              <details>
                <summary>Details</summary>
                <pre>{JSON.stringify({ code: item.failure.code, ...item.failure.details }, null, 2)}</pre>
              </details>
            </>
          ) : null}
        </div>
      );
    default: {
      const never: never = item;
      return never;
    }
  }
});

function AssistantView({ item }: { item: AssistantItem }) {
  const lines = item.reasoning ? item.reasoning.trimEnd().split('\n').length : 0;
  return (
    <div class="item assistant">
      {item.reasoning ? (
        <details class="reasoning">
          <summary>
            {item.done || item.text ? 'Thinking' : 'Thinking…'} ({lines} line{lines === 1 ? '' : 's'})
          </summary>
          <p>{item.reasoning.trimEnd()}</p>
        </details>
      ) : null}
      {item.text ? (
        <Markdown source={item.text} />
      ) : !item.done && !item.reasoning ? (
        <p class="muted">…</p>
      ) : null}
    </div>
  );
}

const ICON: Record<ToolItem['status'], [string, string]> = {
  running: ['⋯', 'running'],
  done: ['✓', 'done'],
  error: ['✗', 'error'],
  denied: ['⊘', 'denied'],
};

function ToolView({ item }: { item: ToolItem }) {
  const [icon, label] = ICON[item.status];
  const files = item.diff ? parseDiff(item.diff) : [];
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  return (
    <div class={`item tool ${item.status}`}>
      <div class="tool-line">
        <span class={`status ${item.status}`} role="img" aria-label={label}>
          {icon}
        </span>
        {/* A tool's title quotes its command: shown in the order it runs (no bidi reordering). */}
        <span class="tool-title">{safeTerminalText(item.title)}</span>
        {files.length ? (
          <span class="counts">
            <span class="add">+{added}</span> <span class="del">-{removed}</span>
          </span>
        ) : null}
        {item.status === 'denied' ? <span class="denied-label">denied</span> : null}
        {item.summary ? <span class="summary">{outsideText(summaryLine(item))}</span> : null}
        {item.duration_ms !== undefined ? <span class="duration">{formatMs(item.duration_ms)}</span> : null}
      </div>
      {item.files.length ? (
        <ul class="files">
          {item.files.map((f) => (
            <li key={`${f.path}:${f.change}`}>
              {f.change === 'create' ? '+' : f.change === 'delete' ? '-' : '~'} {outsideText(f.path)}
            </li>
          ))}
        </ul>
      ) : null}
      {files.length && item.status !== 'denied' ? <DiffView files={files} /> : null}
    </div>
  );
}

/** The summary, without the diff it may quote when the diff is shown below it anyway. */
function summaryLine(item: ToolItem): string {
  const summary = item.summary ?? '';
  if (!item.diff) return summary;
  const at = summary.search(/\s--- (a\/|\/dev\/null)/);
  return at > 0 ? summary.slice(0, at) : summary;
}
