/**
 * The sessions: newest first, filtered by state, searched by title and message text (the
 * `session_search` tool), and a form to start a new one.
 * @module
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { href } from '../router';
import type { SessionView } from '../session-controller';
import { Badge, ErrorBox, formatTime, Loading, outsideText } from './common';
import { errorMessage, useResource } from './hooks';

interface SearchResult {
  session_id: string;
  title: string;
  updated_at: number;
  snippet: string;
}

const STATES = ['all', 'idle', 'running', 'cancelling', 'compacting'] as const;

export function SessionsPage({ api }: { api: Api }): JSX.Element {
  const list = useResource(
    () =>
      api.get<{ sessions: SessionView[]; total: number }>('v1/sessions', { limit: 200, roots_only: true }),
    [api],
  );
  const [query, setQuery] = useState('');
  const [state, setState] = useState<(typeof STATES)[number]>('all');
  const [search, setSearch] = useState<{ results?: SearchResult[]; error?: unknown }>({});

  useEffect(() => {
    const q = query.trim();
    if (!q) {
      setSearch({});
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      api.get<{ results: SearchResult[] }>('v1/session-search', { query: q, limit: 50 }).then(
        (r) => live && setSearch({ results: r.results }),
        (error: unknown) => live && setSearch({ error }),
      );
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [api, query]);

  // Refresh now and then so states (running, idle) stay current.
  useEffect(() => {
    const timer = setInterval(() => list.reload(), 5_000);
    return () => clearInterval(timer);
  }, [list.reload]);

  const sessions = list.data?.sessions ?? [];
  const matching = search.results ? new Map(search.results.map((r) => [r.session_id, r])) : undefined;
  const shown = sessions.filter(
    (s) => (state === 'all' || s.state === state) && (!matching || matching.has(s.id)),
  );

  return (
    <div class="page sessions-page">
      <div class="page-head">
        <h1>Sessions</h1>
        <NewSession api={api} />
      </div>
      <div class="filters">
        <label>
          <span>Search</span>
          <input
            type="search"
            placeholder="title or message text"
            value={query}
            onInput={(event) => setQuery((event.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          <span>State</span>
          <select
            value={state}
            onChange={(event) => setState((event.target as HTMLSelectElement).value as typeof state)}
          >
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {search.error ? <ErrorBox title="Search failed" error={search.error} /> : null}
      {list.error && !list.data ? <ErrorBox error={list.error} onRetry={list.reload} /> : null}
      {!list.data && !list.error ? <Loading what="sessions" /> : null}
      {list.data ? (
        shown.length === 0 ? (
          <p class="empty">
            {sessions.length === 0
              ? 'No sessions yet. Start one above.'
              : 'No session matches the search and state.'}
          </p>
        ) : (
          <ul class="session-list">
            {shown.map((s) => (
              <li key={s.id}>
                <a href={href({ name: 'session', id: s.id, tab: 'chat' })}>
                  <span class="title">{outsideText(s.title) || <span class="muted">(untitled)</span>}</span>
                  <Badge tone={s.state === 'idle' ? undefined : 'live'}>{s.state}</Badge>
                  <span class="meta">
                    <code>{s.id}</code> · {s.message_count} messages ·{' '}
                    {outsideText(s.model) || 'default model'} · {formatTime(s.updated_at)}
                    {s.queue_length ? ` · ${s.queue_length} queued` : ''}
                  </span>
                  {matching?.get(s.id)?.snippet ? (
                    <span class="snippet">{outsideText(matching.get(s.id)?.snippet)}</span>
                  ) : null}
                </a>
              </li>
            ))}
          </ul>
        )
      ) : null}
      {list.data && list.data.total > sessions.length ? (
        <p class="muted">
          Showing the {sessions.length} most recent of {list.data.total} sessions.
        </p>
      ) : null}
    </div>
  );
}

function NewSession({ api }: { api: Api }) {
  const [title, setTitle] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="new-session"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          const { session } = await api.post<{ session: { id: string } }>(
            'v1/sessions',
            title.trim() ? { title: title.trim() } : {},
          );
          location.hash = href({ name: 'session', id: session.id, tab: 'chat' });
        } catch (e) {
          setError(`Could not create the session: ${errorMessage(e)}`);
        } finally {
          setBusy(false);
        }
      }}
    >
      <label>
        <span class="sr-only">New session title</span>
        <input
          placeholder="Title (optional)"
          value={title}
          onInput={(event) => setTitle((event.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={busy}>
        New session
      </button>
      {error ? (
        <p class="error-line" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  );
}
