/**
 * `/multiplayer_dashboard`: a scrollable summary of the multiplayer coordination dashboard read
 * model, read through the client (the direct read model in process, the HTTP route when
 * attached; never the parity getter). r refreshes; each load gives up after 2 s; it defaults to
 * the active session; `operator_runtime` is a one-line stub (spec, Dashboard surfaces).
 * @module
 */
import { Text } from 'ink';
import type { TuiClient } from '../../client';
import { Frame } from '../frame';
import { ScrollView } from '../scroll-view';
import { useLatestInput } from '../use-latest-input';
import { useLoad } from './use-load';

export const DASHBOARD_TOOL = 'get_multiplayer_coordination_dashboard';
/** spec, Limits: TUI dashboard refresh has a 2 second load timeout. */
export const DASHBOARD_TIMEOUT_MS = 2_000;

export interface DashboardViewProps {
  client: TuiClient;
  sessionId?: string;
  height: number;
  isActive?: boolean;
  timeoutMs?: number;
  onClose(): void;
}

export function DashboardView({
  client,
  sessionId,
  height,
  isActive,
  timeoutMs = DASHBOARD_TIMEOUT_MS,
  onClose,
}: DashboardViewProps) {
  const { state, reload } = useLoad(
    (signal) =>
      client.callTool(DASHBOARD_TOOL, sessionId ? { session_id: sessionId } : {}, { sessionId, signal }),
    timeoutMs,
  );
  useLatestInput(
    (input, key) => {
      if (key.escape || input === 'q') onClose();
      else if (input === 'r') reload();
    },
    { isActive: isActive !== false },
  );
  const lines =
    state.status === 'ready'
      ? dashboardSummary(state.value.value)
      : state.status === 'loading'
        ? ['loading…']
        : [];
  return (
    <Frame
      title={`Multiplayer coordination dashboard${sessionId ? ` · session ${sessionId}` : ''}`}
      hint="r refresh · ↑↓ pgup pgdn scroll · esc close"
    >
      {state.status === 'error' ? (
        <Text color={state.unavailable ? 'yellow' : 'red'} wrap="wrap">
          {state.unavailable ? `not available: ${state.message}` : `error: ${state.message}`}
        </Text>
      ) : (
        <ScrollView lines={lines} height={Math.max(3, height - 5)} isActive={isActive} />
      )}
    </Frame>
  );
}

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Rec) : {});

/** The summary lines; `operator_runtime` is one line, whatever its size. */
export function dashboardSummary(value: unknown): string[] {
  const d = rec(value);
  const lines: string[] = [];
  lines.push(`schema ${String(d.schema_version ?? '?')}  generated ${String(d.generated_at_unix ?? '?')}`);
  const filters = rec(d.filters_applied);
  lines.push(
    `filters  recent_runs_limit=${String(filters.recent_runs_limit ?? '?')}${filters.session_id ? `  session_id=${String(filters.session_id)}` : ''}`,
  );
  lines.push('');
  const traces = Array.isArray(d.reference_traces) ? (d.reference_traces as Rec[]) : [];
  lines.push(`reference traces (${traces.length})`);
  for (const t of traces) {
    lines.push(
      `  ${String(t.trace_id ?? '?').padEnd(28)} ${String(t.scenario_kind ?? '').padEnd(19)} steps ${String(t.step_count ?? '?').padStart(3)}  actors ${String(t.actor_count ?? '?')}${t.title ? `  ${String(t.title)}` : ''}`,
    );
  }
  const live = rec(d.live_export);
  lines.push('');
  lines.push(
    `live export  available=${String(live.available ?? '?')}  ${String(live.maturity_label ?? '')}  ${String(live.cli_command ?? '')}`,
  );
  const conf = rec(d.conformance_profile);
  lines.push(
    `conformance  ${String(conf.profile_id ?? '?')}  corpus_valid=${String(conf.corpus_valid ?? '?')}`,
  );
  lines.push(operatorRuntimeStub(d));
  const warnings = Array.isArray(d.warnings) ? (d.warnings as unknown[]) : [];
  lines.push('');
  lines.push(`warnings (${warnings.length})`);
  for (const w of warnings) lines.push(`  ! ${String(w)}`);
  lines.push('');
  if (d.mutation_boundary) lines.push(String(d.mutation_boundary));
  if (d.coordination_posture_note) lines.push(String(d.coordination_posture_note));
  return lines;
}

export function operatorRuntimeStub(d: Rec): string {
  if (!('operator_runtime' in d)) return 'operator runtime  (none: no session scoped)';
  const rt = rec(d.operator_runtime);
  const checks = Object.values(rec(rt.checks)).map((c) => String(rec(c).status ?? '?'));
  const counts = new Map<string, number>();
  for (const s of checks) counts.set(s, (counts.get(s) ?? 0) + 1);
  const runs = Array.isArray(rt.recent_runs) ? rt.recent_runs.length : 0;
  const warn = Array.isArray(rt.warnings) ? rt.warnings.length : 0;
  return `operator runtime  session ${String(rt.session_id ?? '?')} · ${checks.length} checks (${[...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'none'}) · ${runs} recent runs · ${warn} warnings`;
}
