/**
 * Shared pieces: the error box (what went wrong and what to do), the loading line, the
 * view / raw JSON switch every readout has, and small formatters.
 * @module
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { visibleControls } from '../../../../util/terminal-text';
import { ApiError, errorMessage } from '../api';

export function ErrorBox({
  error,
  onRetry,
  title,
}: {
  error: unknown;
  onRetry?: () => void;
  title?: string;
}) {
  return (
    <div class="error-box" role="alert">
      <strong>{title ?? errorTitle(error)}</strong>
      <p>{errorMessage(error)}</p>
      {onRetry ? (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

function errorTitle(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Something went wrong';
  switch (error.code) {
    case 'unreachable':
      return 'The server cannot be reached';
    case 'timeout':
      return 'The server did not answer';
    case 'not_found':
      return 'Not found';
    case 'unauthorized':
      return 'Not signed in';
    case 'unavailable':
      return 'Not available';
    default:
      return 'The request failed';
  }
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" aria-live="polite">
      Loading {what}…
    </p>
  );
}

/** A readout rendered as a view, with its raw JSON one click away. */
export function ReadoutFrame(props: {
  title: string;
  source: string;
  data: unknown;
  children: ComponentChildren;
  actions?: ComponentChildren;
}): JSX.Element {
  const [raw, setRaw] = useState(false);
  return (
    <section class="readout" aria-label={props.title}>
      <header class="readout-head">
        <h2>{props.title}</h2>
        <code class="muted">{props.source}</code>
        <div class="spacer" />
        {props.actions}
        <button type="button" aria-pressed={raw} onClick={() => setRaw(!raw)}>
          {raw ? 'View' : 'Raw JSON'}
        </button>
      </header>
      {raw ? <pre class="raw-json">{JSON.stringify(props.data, null, 2)}</pre> : props.children}
    </section>
  );
}

export function KeyValues({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="kv">
      {rows.map(([key, value]) => (
        <div key={key}>
          <dt>{key}</dt>
          <dd>
            {value === undefined || value === null || value === '' ? <span class="muted">—</span> : value}
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function Badge({ tone, children }: { tone?: string; children: ComponentChildren }) {
  return <span class={`badge ${tone ? `badge-${tone}` : ''}`}>{children}</span>;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Unix seconds or milliseconds → local date and time. */
export function formatTime(value: number | string | null | undefined): string {
  if (value === null || value === undefined || value === '' || value === 0) return '—';
  const n = typeof value === 'string' ? Date.parse(value) : value < 1e12 ? value * 1000 : value;
  const date = new Date(n);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/**
 * Text from outside (a session title, a file name, a model, tool or agent name) to show as plain
 * text: every control character and bidi override shown as a marker (`<U+202E>`, `^[`), as the
 * permission card shows them, so it cannot reorder or hide what is shown around it.
 */
export function outsideText(text: string | null | undefined): string {
  return text ? visibleControls(text) : '';
}

export function str(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
