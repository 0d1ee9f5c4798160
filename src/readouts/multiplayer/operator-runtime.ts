/**
 * operator_runtime: seven probes of what this process and database can show for one session.
 * Each check's status is derived from real state; its sources name the evidence.
 * @module
 */
import type { AgentService } from '../../agent/types';
import type { RunLedger } from '../../runs/run-ledger';
import type { SessionStore } from '../../sessions/session-store';
import type { Checkpoints } from '../../workspace/checkpoints';

/**
 * What the operator_runtime probes read. The capabilities of the runtime the session lives in
 * are probed on the services that carry them (the agent's cancel path, the permission service,
 * session search), so a runtime that does not wire one says so.
 */
export interface OperatorRuntimeDeps {
  readonly sessions: Pick<SessionStore, 'require' | 'root' | 'family'> &
    Partial<Pick<SessionStore, 'search'>>;
  readonly runs: Pick<RunLedger, 'available' | 'list' | 'eventCount'>;
  readonly claims: { posture(): Promise<{ active: number; hard: number; soft: number }> };
  readonly runtime: { readonly mcpOnly: boolean };
  /** Checks run before workspace mutations in this process (the hard claim guard). */
  readonly mutationGuards: readonly unknown[];
  readonly ws: { readonly checkpoints: Pick<Checkpoints, 'list'> };
  /** The agent: `cancelRun` is the cancel path (update_agent_run). */
  readonly agent?: Partial<Pick<AgentService, 'cancelRun'>>;
  /** The permission service: asks before mutating tools. */
  readonly permissions?: object;
}

export type CheckStatus = 'present' | 'partial' | 'advisory' | 'missing';
export interface CheckSource {
  name: string;
  kind: 'table' | 'service' | 'config' | 'process';
  durability: 'durable' | 'process' | 'none';
  summary: string;
}
export interface Check {
  status: CheckStatus;
  summary: string;
  sources: CheckSource[];
}

export const OPERATOR_RUNTIME_PROFILE = 'svc.local_workspace_runtime';

export async function buildOperatorRuntime(app: OperatorRuntimeDeps, sessionId: string, limit: number) {
  const session = await app.sessions.require(sessionId);
  const warnings: string[] = [];
  const root = await app.sessions.root(sessionId);
  const family = await app.sessions.family(root);
  const ledger = await runLedgerEvidence(app, root, limit);
  if (!ledger.available || ledger.rows === 0) warnings.push('no_recent_runs');

  const claimPosture = await app.claims.posture();
  if (claimPosture.active > 0 && claimPosture.hard === 0) warnings.push('workspace_claims_advisory');
  if (app.runtime.mcpOnly) warnings.push('minimal_mcp_only');

  const checks: Record<string, Check> = {
    actor_identity: {
      status: ledger.rows > 0 ? 'present' : 'partial',
      summary:
        ledger.rows > 0
          ? `session ${session.id} (agent ${session.agent}) has ${ledger.rows} run(s) with lineage in the durable ledger`
          : `session ${session.id} is known; it has no runs yet, so no actor lineage`,
      sources: [
        {
          name: 'sessions',
          kind: 'table',
          durability: 'durable',
          summary: `session known, agent ${session.agent}, ${family.length} session(s) in the family`,
        },
        {
          name: 'agent_runs',
          kind: 'table',
          durability: ledger.available ? 'durable' : 'none',
          summary: ledger.available
            ? `${ledger.rows} run(s) for the session family, agents: ${ledger.agents.join(', ') || 'none'}`
            : ledger.reason,
        },
      ],
    },
    authority_boundary: authorityBoundary(app),
    workspace_state: {
      status: claimPosture.hard > 0 || claimPosture.active === 0 ? 'present' : 'advisory',
      summary:
        claimPosture.active === 0
          ? 'shared runtime state in the workspace database; hard claims are enforced on mutation tools (none active)'
          : claimPosture.hard > 0
            ? `${claimPosture.hard} hard and ${claimPosture.soft} soft claim(s) active; hard claims block overlapping mutations of other sessions`
            : `${claimPosture.soft} soft claim(s) active; soft claims are advisory and block nothing`,
      sources: [
        {
          name: 'workspace_claims',
          kind: 'table',
          durability: 'durable',
          summary: `${claimPosture.active} active claim(s)`,
        },
        {
          name: 'hard_claim_guard',
          kind: 'service',
          durability: 'process',
          summary: `${app.mutationGuards.length} mutation guard(s) installed in this process`,
        },
      ],
    },
    runtime_evidence: {
      status: !ledger.available ? 'missing' : ledger.rows > 0 ? 'present' : 'partial',
      summary: !ledger.available
        ? `no durable agent run ledger: ${ledger.reason}`
        : ledger.rows > 0
          ? `durable run ledger with ${ledger.rows} session-family run(s)`
          : 'durable run ledger present; no session-family runs yet',
      sources: [
        {
          name: 'agent_runs',
          kind: 'table',
          durability: ledger.available ? 'durable' : 'none',
          summary: ledger.available
            ? `${ledger.rows} row(s), ${ledger.events} ledger event(s)`
            : ledger.reason,
        },
      ],
    },
    handoff_recovery: await handoffRecovery(app, family),
    interruptibility: interruptibility(app, ledger),
    boundary_honesty: app.runtime.mcpOnly
      ? {
          status: 'missing',
          summary: 'minimal MCP-only runtime: no HTTP session surface or operator attached in this process',
          sources: [
            { name: 'runtime', kind: 'process', durability: 'process', summary: 'svc service start mcp' },
          ],
        }
      : {
          status: 'present',
          // The runtime the session lives in, not the surface this read came through: the HTTP
          // route, the agent tool and `svc stigmergy multiplayer dashboard --json` (a detached
          // process) must give the same JSON (DASH-42, DASH-56).
          summary: 'full app runtime: session API, permission service and run ledger',
          sources: [{ name: 'runtime', kind: 'process', durability: 'process', summary: 'full app runtime' }],
        },
  };

  return {
    schema_version: 1,
    profile: OPERATOR_RUNTIME_PROFILE,
    session_id: sessionId,
    checks,
    recent_runs: ledger.recent,
    warnings,
  };
}

interface LedgerEvidence {
  available: boolean;
  reason: string;
  rows: number;
  events: number;
  agents: string[];
  recent: Record<string, unknown>[];
  lineage: boolean;
  interrupted: number;
}

/** The durable run ledger's rows for the session family (spec: session-family run references). */
async function runLedgerEvidence(
  app: Pick<OperatorRuntimeDeps, 'runs'>,
  rootSessionId: string,
  limit: number,
): Promise<LedgerEvidence> {
  const availability = app.runs.available();
  if (!availability.ok) {
    return {
      available: false,
      reason: availability.reason,
      rows: 0,
      events: 0,
      agents: [],
      recent: [],
      lineage: false,
      interrupted: 0,
    };
  }
  const runs = await app.runs.list({ family_session_id: rootSessionId, limit: 1000 });
  const counts = await Promise.all(runs.map((r) => app.runs.eventCount(r.id)));
  const events = counts.reduce((n, c) => n + c, 0);
  return {
    available: true,
    reason: '',
    rows: runs.length,
    events,
    agents: [...new Set(runs.map((r) => r.agent))],
    recent: runs.slice(0, limit).map((r) => ({
      run_id: r.id,
      session_id: r.session_id,
      parent_run_id: r.parent_run_id,
      family_session_id: r.family_session_id,
      status: r.status,
      agent: r.agent,
      origin: r.origin,
      created_at: r.created_at,
      finished_at: r.finished_at,
    })),
    lineage: runs.some((r) => r.parent_run_id !== null),
    interrupted: runs.filter((r) => r.status === 'interrupted').length,
  };
}

function authorityBoundary(app: OperatorRuntimeDeps): Check {
  const permission = app.permissions !== undefined;
  // The full app's session API parks permission requests for an operator (HTTP or TUI) to answer,
  // whichever process reads the dashboard; a minimal MCP-only runtime has no such surface. Not
  // keyed on the surfaces mounted in the reading process, so every surface gives the same JSON.
  const question = !app.runtime.mcpOnly;
  return {
    status: permission && question ? 'present' : permission || question ? 'partial' : 'missing',
    summary: `permission service ${permission ? 'wired' : 'absent'}; question surface ${question ? 'available (session API: HTTP, TUI)' : 'absent (minimal MCP-only runtime)'}`,
    sources: [
      {
        name: 'permission_service',
        kind: 'service',
        durability: 'process',
        summary: permission ? 'asks before mutating tools' : 'absent',
      },
      {
        name: 'question_surface',
        kind: 'process',
        durability: 'process',
        summary: question ? 'HTTP/TUI can answer permission requests' : 'none in a minimal MCP-only runtime',
      },
    ],
  };
}

async function handoffRecovery(
  app: OperatorRuntimeDeps,
  family: { id: string; metadata: Record<string, unknown> }[],
): Promise<Check> {
  const ids = new Set(family.map((s) => s.id));
  const summaries = family.reduce(
    (n, s) => n + (typeof s.metadata.compactions === 'number' ? s.metadata.compactions : 0),
    0,
  );
  let checkpoints = 0;
  let checkpointNote = '';
  try {
    checkpoints = (await app.ws.checkpoints.list()).filter(
      (c) => c.session_id !== null && ids.has(c.session_id),
    ).length;
  } catch (error) {
    checkpointNote = ` (checkpoints unavailable: ${error instanceof Error ? error.message.split(';')[0] : String(error)})`;
  }
  const capsules = summaries + checkpoints;
  const historian = typeof app.sessions.search === 'function';
  return {
    status: capsules > 0 && historian ? 'present' : capsules > 0 || historian ? 'partial' : 'missing',
    summary: `${summaries} compaction summary(ies) and ${checkpoints} checkpoint(s) as continuity capsules${checkpointNote}; historian retrieval (session_search) ${historian ? 'available' : 'absent'}`,
    sources: [
      {
        name: 'continuity_capsules',
        kind: 'table',
        durability: 'durable',
        summary: `${capsules} capsule(s): compaction summaries in messages, checkpoints under refs/svc/checkpoints`,
      },
      {
        name: 'session_search',
        kind: 'service',
        durability: historian ? 'durable' : 'none',
        summary: historian ? 'searches session history' : 'not registered',
      },
    ],
  };
}

function interruptibility(app: OperatorRuntimeDeps, ledger: LedgerEvidence): Check {
  const cancel = typeof app.agent?.cancelRun === 'function';
  const parts = [cancel, ledger.available, ledger.available];
  const count = parts.filter(Boolean).length;
  return {
    status: count === 3 ? 'present' : count > 0 ? 'partial' : 'missing',
    summary: `cancel path ${cancel ? 'present (update_agent_run cancel)' : 'absent'}; run lineage ${ledger.lineage ? 'recorded with parent runs' : ledger.available ? 'recorded' : 'absent'}; interrupted-run recovery ${ledger.available ? `active (${ledger.interrupted} interrupted run(s) recovered)` : 'absent'}`,
    sources: [
      {
        name: 'update_agent_run',
        kind: 'service',
        durability: 'process',
        summary: cancel ? 'cancels active runs' : 'not registered',
      },
      {
        name: 'agent_runs',
        kind: 'table',
        durability: ledger.available ? 'durable' : 'none',
        summary: 'runs marked interrupted after a crash',
      },
    ],
  };
}
