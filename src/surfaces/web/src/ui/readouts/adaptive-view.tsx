/**
 * The session's adaptive orchestration snapshot: its posture, the effective genome, how it was
 * classified, the monitor's last evaluation, the runtime apply status and the regulatory history.
 * @module
 */
import type { Api } from '../../api';
import { Badge, formatTime, KeyValues, Loading, ReadoutFrame, str } from '../common';
import { useResource } from '../hooks';
import { Unavailable } from './operating-mode-view';

interface Adaptive {
  session_id: string;
  action: string;
  posture: Record<string, unknown> & { state: string; reason?: string };
  classification_source?: string;
  effective_genome?: Record<string, unknown>;
  last_reshape_reason?: string;
  last_reshape_signal_id?: string;
  hint_sources?: string;
  runtime_apply_status?: string;
  runtime_apply_pending_since?: string | number;
  runtime_apply_pending_reason?: string;
  runtime_apply_error?: string;
  last_monitor_evaluation?: Record<string, unknown>;
  regulatory_history?: { event_kind: string; at: string | number; evaluation?: Record<string, unknown> }[];
}

const TONE: Record<string, string> = {
  active: 'ok',
  applied: 'ok',
  'enabled-idle': 'ok',
  degraded: 'bad',
  'pending-apply': 'warn',
};

export function AdaptiveView({ api, sessionId }: { api: Api; sessionId: string }) {
  const data = useResource(
    () => api.get<Adaptive>('v1/adaptive-orchestration', { session_id: sessionId }),
    [api, sessionId],
  );
  if (data.error && !data.data) return <Unavailable error={data.error} onRetry={data.reload} />;
  if (!data.data) return <Loading what="adaptive orchestration" />;
  const a = data.data;
  const flags = Object.entries(a.posture).filter(([, v]) => typeof v === 'boolean');
  return (
    <ReadoutFrame
      title="Adaptive orchestration"
      source={`GET v1/adaptive-orchestration?session_id=${sessionId}`}
      data={a}
    >
      <KeyValues
        rows={[
          [
            'Posture',
            <Badge key="p" tone={TONE[a.posture.state]}>
              {a.posture.state}
            </Badge>,
          ],
          ['Reason', a.posture.reason],
          ['Flags', flags.map(([k, v]) => `${k} ${v ? 'yes' : 'no'}`).join(' · ')],
          ['Action', a.action],
          ['Classified by', a.classification_source],
          ['Apply status', a.runtime_apply_status],
          [
            'Pending since',
            a.runtime_apply_pending_since ? formatTime(a.runtime_apply_pending_since) : undefined,
          ],
          ['Pending because', a.runtime_apply_pending_reason],
          ['Apply error', a.runtime_apply_error],
          [
            'Last reshape',
            a.last_reshape_reason
              ? `${a.last_reshape_reason} (${a.last_reshape_signal_id ?? ''})`
              : undefined,
          ],
          ['Hint sources', a.hint_sources],
        ]}
      />
      {a.effective_genome ? (
        <>
          <h3>Effective genome</h3>
          <KeyValues rows={Object.entries(a.effective_genome).map(([k, v]) => [k, str(v)])} />
        </>
      ) : null}
      {a.last_monitor_evaluation ? (
        <>
          <h3>Last monitor evaluation</h3>
          <KeyValues rows={Object.entries(a.last_monitor_evaluation).map(([k, v]) => [k, str(v)])} />
        </>
      ) : null}
      {a.regulatory_history?.length ? (
        <>
          <h3>Regulatory history (newest first)</h3>
          <ul class="plain">
            {a.regulatory_history.map((h, i) => (
              <li key={i}>
                {formatTime(h.at)} · {h.event_kind}{' '}
                {h.evaluation ? `· ${str(h.evaluation.decision)} ${str(h.evaluation.reason)}` : ''}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </ReadoutFrame>
  );
}
