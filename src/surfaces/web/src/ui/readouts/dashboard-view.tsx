/**
 * The multiplayer coordination dashboard (`svc.multiplayer_coordination_dashboard.v1`): the
 * reference traces, live export and conformance posture, and with a session its operator
 * runtime checks. Read-only: it authorizes nothing.
 * @module
 */
import type { Api } from '../../api';
import { Badge, ErrorBox, formatTime, KeyValues, Loading, outsideText, ReadoutFrame, str } from '../common';
import { useResource } from '../hooks';

interface Dashboard {
  schema_version: string;
  generated_at_unix: number;
  filters_applied: { recent_runs_limit: number; session_id?: string };
  reference_traces: {
    fixture_file: string;
    trace_id: string;
    scenario_kind: string;
    title?: string;
    step_count: number;
    actor_count: number;
  }[];
  live_export: { available: boolean; cli_command: string; maturity_label: string; notes: string };
  conformance_profile: { profile_id: string; maturity_label: string; corpus_valid: boolean };
  operator_runtime?: {
    profile: string;
    session_id: string;
    checks: Record<
      string,
      {
        status: string;
        summary: string;
        sources?: { name: string; kind: string; durability: string; summary: string }[];
      }
    >;
    recent_runs: Record<string, unknown>[];
    warnings: string[];
  };
  mutation_boundary: string;
  coordination_posture_note: string;
  warnings: string[];
}

const STATUS_TONE: Record<string, string> = {
  present: 'ok',
  partial: 'warn',
  advisory: 'warn',
  missing: 'bad',
};

export function DashboardView({ api, sessionId }: { api: Api; sessionId?: string }) {
  const query = { session_id: sessionId, recent_runs_limit: 5 };
  const data = useResource(
    () => api.get<Dashboard>('v1/multiplayer-coordination-dashboard', query),
    [api, sessionId],
  );
  if (data.error && !data.data) return <ErrorBox error={data.error} onRetry={data.reload} />;
  if (!data.data) return <Loading what="the dashboard" />;
  const d = data.data;
  return (
    <ReadoutFrame
      title="Multiplayer coordination dashboard"
      source={`GET v1/multiplayer-coordination-dashboard${sessionId ? `?session_id=${sessionId}` : ''}`}
      data={d}
      actions={
        <button type="button" onClick={data.reload}>
          Refresh
        </button>
      }
    >
      <p class="muted">
        {d.schema_version} · generated {formatTime(d.generated_at_unix)} · {d.mutation_boundary}
      </p>
      {d.warnings.length ? (
        <ul class="warnings">
          {d.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      ) : null}
      {d.operator_runtime ? (
        <>
          <h3>Operator runtime · {d.operator_runtime.profile}</h3>
          <div class="checks">
            {Object.entries(d.operator_runtime.checks).map(([key, check]) => (
              <div class="check" key={key}>
                <div>
                  <strong>{key.replace(/_/g, ' ')}</strong>{' '}
                  <Badge tone={STATUS_TONE[check.status]}>{check.status}</Badge>
                </div>
                <p>{check.summary}</p>
                {check.sources?.length ? (
                  <p class="muted">
                    {check.sources.map((s) => `${s.name} (${s.kind}, ${s.durability})`).join(' · ')}
                  </p>
                ) : null}
              </div>
            ))}
          </div>
          <p class="muted">
            {d.operator_runtime.recent_runs.length} recent run(s)
            {d.operator_runtime.warnings.length ? ` · ${d.operator_runtime.warnings.join(', ')}` : ''}
          </p>
        </>
      ) : (
        <p class="muted">Open the dashboard from a session to see its operator runtime checks.</p>
      )}
      <h3>Reference traces</h3>
      <div class="table-wrap">
        <table class="data">
          <thead>
            <tr>
              <th>Trace</th>
              <th>Scenario</th>
              <th>Title</th>
              <th>Steps</th>
              <th>Actors</th>
            </tr>
          </thead>
          <tbody>
            {d.reference_traces.map((t) => (
              <tr key={t.trace_id}>
                <td>
                  <code>{t.trace_id}</code>
                </td>
                <td>{t.scenario_kind}</td>
                <td>{outsideText(t.title)}</td>
                <td>{t.step_count}</td>
                <td>{t.actor_count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h3>Export and conformance</h3>
      <KeyValues
        rows={[
          [
            'Live export',
            `${d.live_export.available ? 'available' : 'unavailable'} · ${d.live_export.maturity_label}`,
          ],
          ['Export command', <code key="c">{d.live_export.cli_command}</code>],
          ['Conformance profile', d.conformance_profile.profile_id],
          [
            'Corpus',
            <Badge key="v" tone={d.conformance_profile.corpus_valid ? 'ok' : 'bad'}>
              {d.conformance_profile.corpus_valid ? 'valid' : 'invalid'}
            </Badge>,
          ],
          ['Recent runs limit', str(d.filters_applied.recent_runs_limit)],
        ]}
      />
      <p class="muted">{d.coordination_posture_note}</p>
    </ReadoutFrame>
  );
}
