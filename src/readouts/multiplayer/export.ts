/**
 * Runtime export (`svc stigmergy multiplayer export`): the real coordination trace of this
 * workspace, in the same shape as the reference corpus. Actors are sessions (agents, sub-agents)
 * and the operator who started runs; steps come from the durable ledger (runs starting and
 * ending), file history (edits, with paths only), workspace claims and negotiations, markers, and
 * sub-agent sessions picking up a parent's work (handoffs). Redacted: no prompt text, no tool
 * arguments beyond paths, no outputs.
 * @module
 */
import { SvcError } from '../../errors';
import type { ReadModelQueries } from '../../observe/read-model-queries';
import type { RunLedger } from '../../runs/run-ledger';
import type { SessionStore } from '../../sessions/session-store';
import type { Clock } from '../../util/ids';
import type { FileHistory } from '../../workspace/file-history';
import { structuralProblems, type Trace, type TraceStep } from './corpus';

/** What the export reads: the run ledger, the sessions, file history, claims and markers. */
export interface ExportDeps {
  readonly workspace: string;
  readonly clock: Clock;
  readonly runs: Pick<RunLedger, 'available' | 'list' | 'get'>;
  readonly sessions: Pick<SessionStore, 'family' | 'root' | 'list'>;
  /** Workspace claims, negotiations and markers, on the App's store. */
  readonly observe: { readonly queries: Pick<ReadModelQueries, 'trace'> };
  readonly ws: { readonly history: Pick<FileHistory, 'queries'> };
}

export const EXPORT_SCHEMA_VERSION = 'svc.multiplayer_trace_export.v1';
const HUMAN_ORIGINS = new Set(['cli', 'tui', 'http', 'mcp', 'compat', 'acp']);

type Step = Omit<TraceStep, 'seq' | 'at_ms'> & { at: number };

export interface ExportInput {
  session_id?: string;
  since_unix?: number;
  max_steps: number;
  strict: boolean;
}

export async function buildMultiplayerExport(app: ExportDeps, input: ExportInput) {
  const warnings: string[] = [];
  const strictFailures: string[] = [];
  const ledger = app.runs.available();
  if (!ledger.ok) {
    if (input.strict) strictFailures.push(`no durable run ledger: ${ledger.reason}`);
    throw new SvcError('unavailable', `export needs the durable run ledger: ${ledger.reason}`);
  }
  const since = input.since_unix ? input.since_unix * 1000 : 0;
  const sessions = input.session_id
    ? await app.sessions.family(await app.sessions.root(input.session_id))
    : await app.sessions.list({ limit: 10_000 });
  const sessionIds = new Set(sessions.map((s) => s.id));
  const actorOf = (sessionId: string) => `session:${sessionId}`;
  const actors = new Map<string, Trace['actors'][number]>();
  const addActor = (sessionId: string) => {
    const s = sessions.find((x) => x.id === sessionId);
    if (!s) return undefined;
    const id = actorOf(s.id);
    if (!actors.has(id)) actors.set(id, { id, type: s.parent_id ? 'subagent' : 'agent', session: s.id });
    return id;
  };
  const steps: Step[] = [];
  const coordination = app.observe.queries.trace;

  for (const run of await app.runs.list({ limit: 100_000 })) {
    if (!sessionIds.has(run.session_id) || run.created_at < since) continue;
    const actor = addActor(run.session_id);
    if (!actor) continue;
    if (HUMAN_ORIGINS.has(run.origin)) {
      const operatorId = `operator:${run.family_session_id}`;
      if (!actors.has(operatorId))
        actors.set(operatorId, { id: operatorId, type: 'operator', session: run.family_session_id });
    }
    if (run.origin === 'subagent' && run.parent_run_id) {
      const parent = await app.runs.get(run.parent_run_id);
      const from = parent ? addActor(parent.session_id) : undefined;
      if (from && from !== actor)
        steps.push({ at: run.created_at, actor: from, action: 'handoff', paths: [], to: actor });
    }
    if (run.started_at) steps.push({ at: run.started_at, actor, action: 'run.start', paths: [] });
    if (run.finished_at) steps.push({ at: run.finished_at, actor, action: 'run.end', paths: [] });
  }

  for (const edit of await app.ws.history.queries.fileEditsSince(since)) {
    if (!sessionIds.has(edit.session_id)) continue;
    const actor = addActor(edit.session_id);
    if (actor) steps.push({ at: edit.created_at, actor, action: 'file.edit', paths: [edit.path] });
  }

  for (const claim of await coordination.claimsSince(since)) {
    const actor = sessionIds.has(claim.session_id) ? addActor(claim.session_id) : undefined;
    if (!actor) continue;
    const paths = claim.paths;
    steps.push({ at: claim.created_at, actor, action: 'claim.acquire', paths, claim: { mode: claim.mode } });
    if (claim.released_at) steps.push({ at: claim.released_at, actor, action: 'claim.release', paths });
  }
  for (const n of await coordination.negotiationsSince(since)) {
    const actor = sessionIds.has(n.from_session_id) ? addActor(n.from_session_id) : undefined;
    if (actor)
      steps.push({
        at: n.created_at,
        actor,
        action: 'claim.negotiate',
        paths: n.paths,
        claim: { mode: n.mode },
      });
  }
  for (const m of await coordination.markersSince(since)) {
    const actor = sessionIds.has(m.session_id) ? addActor(m.session_id) : undefined;
    if (actor) steps.push({ at: m.created_at, actor, action: 'marker.create', paths: [m.path] });
  }

  // Ties (same millisecond) keep a causal order: claims before runs start, runs end after edits.
  steps.sort((a, b) => a.at - b.at || RANK[a.action] - RANK[b.action]);
  const truncated = steps.length > input.max_steps;
  const kept = truncated ? steps.slice(-input.max_steps) : steps;
  if (truncated) warnings.push(`truncated: kept the last ${input.max_steps} of ${steps.length} steps`);
  const start = kept[0]?.at ?? app.clock.now();
  const traceSteps: TraceStep[] = kept.map(({ at, ...step }, i) => ({
    ...step,
    seq: i + 1,
    at_ms: at - start,
  }));
  const usedActors = new Set(traceSteps.flatMap((s) => [s.actor, ...(s.to ? [s.to] : [])]));
  const trace = {
    trace_id: `export-${Math.floor(app.clock.now() / 1000)}`,
    scenario_kind: scenarioOf(traceSteps),
    title: `Runtime export of ${app.workspace.split('/').pop() || 'workspace'}${input.session_id ? ` (session family of ${input.session_id})` : ''}`,
    actors: [...actors.values()].filter((a) => usedActors.has(a.id)),
    steps: traceSteps,
  };

  if (traceSteps.length === 0) {
    warnings.push('no_evidence: no runs, edits, claims or markers recorded for this scope');
    strictFailures.push('no coordination evidence recorded (no runs, edits, claims or markers)');
  } else {
    strictFailures.push(...structuralProblems(trace).map((p) => `trace: ${p}`));
  }
  return {
    schema_version: EXPORT_SCHEMA_VERSION,
    generated_at_unix: Math.floor(app.clock.now() / 1000),
    redaction: 'paths only: no prompt text, tool arguments beyond paths, or outputs',
    scope: { session_id: input.session_id ?? null, since_unix: input.since_unix ?? null },
    evidence: {
      durable_ledger: true,
      sessions: sessions.length,
      runs: traceSteps.filter((s) => s.action === 'run.start').length,
      file_edits: traceSteps.filter((s) => s.action === 'file.edit').length,
      claims: traceSteps.filter((s) => s.action.startsWith('claim.')).length,
      markers: traceSteps.filter((s) => s.action === 'marker.create').length,
      handoffs: traceSteps.filter((s) => s.action === 'handoff').length,
    },
    trace,
    valid: strictFailures.length === 0,
    strict: input.strict,
    strict_failures: strictFailures,
    warnings,
  };
}

const RANK: Record<TraceStep['action'], number> = {
  'claim.acquire': 0,
  'claim.negotiate': 1,
  handoff: 2,
  'run.start': 3,
  'marker.create': 4,
  'file.edit': 5,
  'marker.delete': 6,
  'run.end': 7,
  'claim.release': 8,
};

/**
 * concurrent: two actors' runs overlap in time; sequential_handoff: work was handed on;
 * solo: one actor worked alone (a kind the reference corpus does not need).
 */
function scenarioOf(steps: TraceStep[]): 'concurrent' | 'sequential_handoff' | 'solo' {
  const open = new Map<string, number>();
  let overlap = false;
  for (const step of steps) {
    if (step.action === 'run.start') {
      if ([...open.keys()].some((a) => a !== step.actor)) overlap = true;
      open.set(step.actor, step.seq);
    } else if (step.action === 'run.end') open.delete(step.actor);
  }
  if (overlap) return 'concurrent';
  return steps.some((s) => s.action === 'handoff') ? 'sequential_handoff' : 'solo';
}
