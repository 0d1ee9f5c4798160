/**
 * The parity readouts as views, each from its own HTTP route (the same JSON the CLI `--json`,
 * the agent tool and the MCP tool return), with the raw JSON one click away: the multiplayer
 * coordination dashboard, the session operating mode, adaptive orchestration, and operator
 * cognition. Scoped to a session when opened from one.
 * @module
 */
import type { JSX } from 'preact';
import type { Api } from '../../api';
import { href, READOUTS, type ReadoutName } from '../../router';
import type { SessionView } from '../../session-controller';
import { useResource } from '../hooks';
import { AdaptiveView } from './adaptive-view';
import { CognitionView } from './cognition-view';
import { DashboardView } from './dashboard-view';
import { OperatingModeView } from './operating-mode-view';

const LABELS: Record<ReadoutName, string> = {
  dashboard: 'Coordination dashboard',
  'operating-mode': 'Operating mode',
  adaptive: 'Adaptive orchestration',
  cognition: 'Operator cognition',
};

export function ReadoutsPage(props: { api: Api; readout: ReadoutName; sessionId?: string }): JSX.Element {
  const { api, readout, sessionId } = props;
  const link = (name: ReadoutName) =>
    sessionId
      ? href({ name: 'session', id: sessionId, tab: 'readouts', readout: name })
      : href({ name: 'readouts', readout: name });
  return (
    <div class={sessionId ? 'readouts' : 'page readouts'}>
      {sessionId ? null : <h1>Readouts</h1>}
      <nav class="subnav" aria-label="Readouts">
        {READOUTS.map((name) => (
          <a key={name} href={link(name)} aria-current={readout === name ? 'page' : undefined}>
            {LABELS[name]}
          </a>
        ))}
      </nav>
      {readout === 'dashboard' ? <DashboardView api={api} sessionId={sessionId} /> : null}
      {readout === 'cognition' ? <CognitionView api={api} /> : null}
      {readout === 'operating-mode' || readout === 'adaptive' ? (
        sessionId ? (
          readout === 'adaptive' ? (
            <AdaptiveView api={api} sessionId={sessionId} />
          ) : (
            <OperatingModeView api={api} sessionId={sessionId} />
          )
        ) : (
          <PickSession api={api} readout={readout} />
        )
      ) : null}
    </div>
  );
}

/** Operating mode and adaptive orchestration are per session: pick one. */
function PickSession({ api, readout }: { api: Api; readout: ReadoutName }) {
  const list = useResource(() => api.get<{ sessions: SessionView[] }>('v1/sessions', { limit: 20 }), [api]);
  return (
    <section class="readout">
      <p>{LABELS[readout]} is a per-session readout. Open it for a session:</p>
      {list.data?.sessions.length ? (
        <ul class="plain">
          {list.data.sessions.map((s) => (
            <li key={s.id}>
              <a href={href({ name: 'session', id: s.id, tab: 'readouts', readout })}>
                {s.title || s.id} <code class="muted">{s.id}</code>
              </a>
            </li>
          ))}
        </ul>
      ) : list.data ? (
        <p class="empty">No sessions yet.</p>
      ) : null}
    </section>
  );
}
