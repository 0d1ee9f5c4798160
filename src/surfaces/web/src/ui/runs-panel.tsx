/**
 * The runs ledger of a session: its runs (status, agent, model, steps, duration), and for one
 * run its trace (phase timings, model steps with their tool calls, permission decisions,
 * errors) and its ledger events, each with its raw JSON one click away.
 * @module
 */
import type { Api } from '../api';
import { href } from '../router';
import {
  Badge,
  ErrorBox,
  formatMs,
  formatTime,
  KeyValues,
  Loading,
  outsideText,
  ReadoutFrame,
  str,
} from './common';
import { useResource } from './hooks';

interface RunRow {
  id: string;
  status: string;
  agent: string;
  model: string | null;
  origin: string;
  prompt_preview: string;
  reason: string | null;
  steps: number;
  usage: { input_tokens?: number; output_tokens?: number } | null;
  cost: number;
  started_at: number | null;
  duration_ms: number | null;
}

interface Trace {
  run: RunRow;
  phases: { phase: string; step: number | null; started_at: number; duration_ms: number | null }[];
  steps: {
    step: number;
    duration_ms: number | null;
    finish_reason: string | null;
    tool_calls: {
      tool_call_id: string;
      tool: string;
      title: string | null;
      duration_ms: number | null;
      is_error: boolean | null;
      error: string | null;
    }[];
  }[];
  permissions: Record<string, unknown>[];
  errors: Record<string, unknown>[];
  totals: Record<string, number>;
}

interface RunEvents {
  events: { seq: number; type: string; payload: Record<string, unknown>; created_at: number }[];
  total: number;
}

const TONE: Record<string, string> = {
  completed: 'ok',
  failed: 'bad',
  running: 'live',
  cancelled: 'warn',
  interrupted: 'warn',
};

export function RunsPanel({ api, sessionId, runId }: { api: Api; sessionId: string; runId?: string }) {
  if (runId) return <RunDetail api={api} sessionId={sessionId} runId={runId} />;
  return <RunList api={api} sessionId={sessionId} />;
}

function RunList({ api, sessionId }: { api: Api; sessionId: string }) {
  const runs = useResource(
    () =>
      api.get<{ runs: RunRow[]; total: number }>('v1/agent-runs', {
        family_session_id: sessionId,
        limit: 100,
      }),
    [api, sessionId],
  );
  if (runs.error && !runs.data) return <ErrorBox error={runs.error} onRetry={runs.reload} />;
  if (!runs.data) return <Loading what="runs" />;
  return (
    <ReadoutFrame
      title="Runs"
      source={`GET v1/agent-runs?family_session_id=${sessionId}`}
      data={runs.data}
      actions={
        <button type="button" onClick={runs.reload}>
          Refresh
        </button>
      }
    >
      {runs.data.runs.length === 0 ? (
        <p class="empty">No runs yet: send a prompt in the chat.</p>
      ) : (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th>Run</th>
                <th>Status</th>
                <th>Agent / model</th>
                <th>Steps</th>
                <th>Duration</th>
                <th>Tokens in/out</th>
                <th>Started</th>
                <th>Prompt</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.runs.map((run) => (
                <tr key={run.id}>
                  <td>
                    <a href={href({ name: 'session', id: sessionId, tab: 'runs', runId: run.id })}>
                      <code>{run.id}</code>
                    </a>
                  </td>
                  <td>
                    <Badge tone={TONE[run.status]}>{run.status}</Badge>
                  </td>
                  <td>
                    {outsideText(run.agent)} · {outsideText(run.model) || '—'}
                  </td>
                  <td>{run.steps}</td>
                  <td>{formatMs(run.duration_ms)}</td>
                  <td>
                    {run.usage?.input_tokens ?? 0}/{run.usage?.output_tokens ?? 0}
                  </td>
                  <td>{formatTime(run.started_at)}</td>
                  <td class="clip">{outsideText(run.prompt_preview)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </ReadoutFrame>
  );
}

function RunDetail({ api, sessionId, runId }: { api: Api; sessionId: string; runId: string }) {
  const path = `v1/agent-runs/${encodeURIComponent(runId)}`;
  const trace = useResource(() => api.get<Trace>(`${path}/trace`), [api, runId]);
  const events = useResource(() => api.get<RunEvents>(`${path}/events`, { limit: 1000 }), [api, runId]);
  const back = (
    <p>
      <a href={href({ name: 'session', id: sessionId, tab: 'runs' })}>← All runs of this session</a>
    </p>
  );
  if (trace.error && !trace.data)
    return (
      <>
        {back}
        <ErrorBox error={trace.error} onRetry={trace.reload} />
      </>
    );
  if (!trace.data) return <Loading what="the run" />;
  const t = trace.data;
  const total = t.phases.reduce((n, p) => n + (p.duration_ms ?? 0), 0) || 1;
  return (
    <>
      {back}
      <ReadoutFrame title={`Run ${outsideText(runId)}`} source={`GET ${path}/trace`} data={t}>
        <KeyValues
          rows={[
            [
              'Status',
              <Badge key="s" tone={TONE[t.run.status]}>
                {t.run.status}
              </Badge>,
            ],
            ['Reason', outsideText(t.run.reason)],
            ['Agent', outsideText(t.run.agent)],
            ['Model', outsideText(t.run.model)],
            ['Origin', outsideText(t.run.origin)],
            ['Duration', formatMs(t.run.duration_ms)],
            ['Steps', t.totals.steps],
            ['Tool calls', `${t.totals.tool_calls} (${t.totals.tool_errors} failed)`],
            ['Permission prompts', t.totals.permission_prompts],
            ['Prompt', outsideText(t.run.prompt_preview)],
          ]}
        />
        <h3>Timings</h3>
        <ol class="timeline" aria-label="Phase timings">
          {t.phases.map((p, i) => (
            <li
              key={i}
              class={`phase phase-${p.phase}`}
              style={{ flexGrow: Math.max(1, ((p.duration_ms ?? 0) / total) * 100) }}
              title={`${p.phase}${p.step !== null ? ` ${p.step}` : ''}: ${formatMs(p.duration_ms)}`}
            >
              {p.phase}
              {p.step !== null ? ` ${p.step}` : ''} · {formatMs(p.duration_ms)}
            </li>
          ))}
        </ol>
        <h3>Steps and tools</h3>
        <ol class="steps">
          {t.steps.map((s) => (
            <li key={s.step}>
              <span>
                Step {s.step}: {formatMs(s.duration_ms)} · {s.finish_reason ?? 'unfinished'}
              </span>
              {s.tool_calls.length ? (
                <ul>
                  {s.tool_calls.map((c) => (
                    <li key={c.tool_call_id} class={c.is_error ? 'error' : ''}>
                      {c.is_error ? '✗' : '✓'} <code>{outsideText(c.tool)}</code> {outsideText(c.title)} ·{' '}
                      {formatMs(c.duration_ms)}
                      {c.error ? <span class="error-line"> {outsideText(c.error)}</span> : null}
                    </li>
                  ))}
                </ul>
              ) : null}
            </li>
          ))}
        </ol>
        {t.permissions.length ? (
          <>
            <h3>Permissions</h3>
            <ul class="plain">
              {t.permissions.map((p, i) => (
                <li key={i}>
                  {str(p.type)} · <code>{outsideText(str(p.tool))}</code>{' '}
                  {outsideText(str(p.decision ?? p.title))} {p.by ? `by ${outsideText(str(p.by))}` : ''}
                </li>
              ))}
            </ul>
          </>
        ) : null}
        {t.errors.length ? (
          <>
            <h3>Errors</h3>
            <ul class="plain">
              {t.errors.map((e, i) => (
                <li key={i} class="error-line">
                  {str(e.type)}: {outsideText(str(e.message ?? e.error))}
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </ReadoutFrame>
      {events.error ? <ErrorBox title="Ledger events unavailable" error={events.error} /> : null}
      {events.data ? (
        <ReadoutFrame title="Ledger events" source={`GET ${path}/events`} data={events.data}>
          <div class="table-wrap">
            <table class="data">
              <thead>
                <tr>
                  <th>#</th>
                  <th>Type</th>
                  <th>At</th>
                  <th>Payload</th>
                </tr>
              </thead>
              <tbody>
                {events.data.events.map((e) => (
                  <tr key={e.seq}>
                    <td>{e.seq}</td>
                    <td>
                      <code>{e.type}</code>
                    </td>
                    <td>{formatTime(e.created_at)}</td>
                    <td class="clip">{outsideText(summarize(e.payload))}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {events.data.total > events.data.events.length ? (
            <p class="muted">
              {events.data.events.length} of {events.data.total} events shown.
            </p>
          ) : null}
        </ReadoutFrame>
      ) : null}
    </>
  );
}

function summarize(payload: Record<string, unknown>): string {
  return Object.entries(payload)
    .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `${k}=${str(v)}`)
    .join(' ')
    .slice(0, 200);
}
