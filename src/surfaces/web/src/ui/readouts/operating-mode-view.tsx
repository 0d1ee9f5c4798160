/**
 * The session's operating mode snapshot: the gate, the lifecycle state, the active pack and what
 * it holds (metadata only), and its diagnostics.
 * @module
 */
import { type Api, ApiError } from '../../api';
import { Badge, ErrorBox, formatTime, KeyValues, Loading, ReadoutFrame, str } from '../common';
import { useResource } from '../hooks';

interface OperatingMode {
  session_id: string;
  enabled: boolean;
  state: string;
  active_operating_pack: string;
  operating_mode_preset_id: string;
  pack_manifest_path?: string;
  last_action?: string;
  unavailable_reason?: string;
  diagnostics?: { section: string; field: string; level: string; message: string }[];
  last_evidence_at?: string | number;
  skills?: unknown;
  hook_count?: number;
  policy_rules?: unknown;
  task_rules?: unknown;
  skill_rules?: unknown;
  choreography?: unknown;
  has_prompt_preamble?: boolean;
}

export function OperatingModeView({ api, sessionId }: { api: Api; sessionId: string }) {
  const data = useResource(
    () => api.get<OperatingMode>('v1/session-operating-mode', { session_id: sessionId }),
    [api, sessionId],
  );
  if (data.error && !data.data) return <Unavailable error={data.error} onRetry={data.reload} />;
  if (!data.data) return <Loading what="the operating mode" />;
  const m = data.data;
  return (
    <ReadoutFrame
      title="Operating mode"
      source={`GET v1/session-operating-mode?session_id=${sessionId}`}
      data={m}
    >
      <KeyValues
        rows={[
          [
            'State',
            <Badge key="s" tone={m.state === 'active' ? 'ok' : m.state.includes('fail') ? 'bad' : undefined}>
              {m.state}
            </Badge>,
          ],
          ['Operating packs', m.enabled ? 'enabled' : 'disabled'],
          ['Active pack', m.active_operating_pack || 'none'],
          ['Preset', m.operating_mode_preset_id],
          ['Manifest', m.pack_manifest_path],
          ['Last action', m.last_action],
          ['Unavailable because', m.unavailable_reason],
          ['Last evidence', formatTime(m.last_evidence_at)],
          ['Skills', count(m.skills)],
          ['Hooks', m.hook_count],
          ['Policy rules', count(m.policy_rules)],
          ['Task rules', count(m.task_rules)],
          ['Skill rules', count(m.skill_rules)],
          ['Choreography', str(m.choreography)],
          ['Prompt preamble', m.has_prompt_preamble ? 'yes (not shown)' : 'no'],
        ]}
      />
      {m.diagnostics?.length ? (
        <>
          <h3>Diagnostics</h3>
          <ul class="warnings">
            {m.diagnostics.map((d, i) => (
              <li key={i}>
                [{d.level}] {d.section}.{d.field}: {d.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </ReadoutFrame>
  );
}

/** A gated readout answers 404 with the reason: say it is off, and why. */
export function Unavailable({ error, onRetry }: { error: unknown; onRetry(): void }) {
  if (error instanceof ApiError && error.code === 'not_found') {
    const reason = error.message.replace(/^404 Not Found:?\s*/, '');
    return (
      <ErrorBox
        title="Not enabled on this server"
        error={
          new Error(reason ? `This readout is off: ${reason}.` : 'This readout is not served by this server.')
        }
      />
    );
  }
  return <ErrorBox error={error} onRetry={onRetry} />;
}

function count(value: unknown): string {
  if (Array.isArray(value)) return value.length ? `${value.length}: ${value.map(str).join(', ')}` : '0';
  if (typeof value === 'number') return String(value);
  return str(value);
}
