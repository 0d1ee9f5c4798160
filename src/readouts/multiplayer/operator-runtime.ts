/**
 * operator_runtime: seven probes of what this process and database can show for one session.
 * Each check's status is derived from real state; its sources name the evidence.
 * @module
 */
import type { App } from '../../app';

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

export function buildOperatorRuntime(app: App, sessionId: string, limit: number) {
  const session = app.sessions.require(sessionId);
  const warnings: string[] = [];
  const family = app.sessions.family(sessionId);
  const familyIds = family.map((s) => s.id);
  const ledger = runLedgerEvidence(app, familyIds, limit);
  if (!ledger.available || ledger.rows === 0) warnings.push('no_recent_runs');

  const claimPosture = app.claims.posture();
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
          summary: ledger.available ? `${ledger.rows} run(s) for the session family` : 'no run ledger',
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
        ? 'no durable agent run ledger in this process'
        : ledger.rows > 0
          ? `durable run ledger with ${ledger.rows} session-family run(s)`
          : 'durable run ledger present; no session-family runs yet',
      sources: [
        {
          name: 'agent_runs',
          kind: 'table',
          durability: ledger.available ? 'durable' : 'none',
          summary: ledger.available ? `${ledger.rows} row(s), ${ledger.events} event(s)` : 'absent',
        },
      ],
    },
    handoff_recovery: handoffRecovery(app, familyIds),
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
          summary: `full app runtime (${[...app.runtime.surfaces].join(', ') || 'detached cli'})`,
          sources: [
            {
              name: 'runtime',
              kind: 'process',
              durability: 'process',
              summary: app.runtime.server ? 'server process' : 'detached process',
            },
          ],
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
  rows: number;
  events: number;
  recent: Record<string, unknown>[];
  lineage: boolean;
  interrupted: number;
}

/** Reads the durable run ledger when this database has one (agent_runs / agent_run_events). */
function runLedgerEvidence(app: App, familyIds: string[], limit: number): LedgerEvidence {
  const none: LedgerEvidence = {
    available: false,
    rows: 0,
    events: 0,
    recent: [],
    lineage: false,
    interrupted: 0,
  };
  const db = app.db;
  const has = (table: string) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
  if (!has('agent_runs') || familyIds.length === 0) return none;
  const marks = familyIds.map(() => '?').join(', ');
  const rows = db
    .prepare(`SELECT * FROM agent_runs WHERE session_id IN (${marks}) ORDER BY created_at DESC`)
    .all(...familyIds) as Record<string, unknown>[];
  const events = has('agent_run_events')
    ? (
        db
          .prepare(
            `SELECT count(*) AS n FROM agent_run_events WHERE run_id IN (SELECT id FROM agent_runs WHERE session_id IN (${marks}))`,
          )
          .get(...familyIds) as { n: number }
      ).n
    : 0;
  return {
    available: true,
    rows: rows.length,
    events,
    recent: rows.slice(0, limit).map((r) => ({
      run_id: r.id,
      session_id: r.session_id,
      parent_run_id: r.parent_run_id ?? null,
      status: r.status,
      agent: r.agent ?? null,
      created_at: r.created_at,
    })),
    lineage: rows.some((r) => r.parent_run_id),
    interrupted: rows.filter((r) => r.status === 'interrupted').length,
  };
}

function authorityBoundary(app: App): Check {
  const permission = app.tools.get('update_agent_run') !== undefined || 'permissions' in app.services;
  const question = app.runtime.surfaces.has('http') || app.runtime.surfaces.has('tui');
  return {
    status: permission && question ? 'present' : permission || question ? 'partial' : 'missing',
    summary: `permission service ${permission ? 'wired' : 'absent'}; question surface ${question ? `attached (${[...app.runtime.surfaces].filter((s) => s === 'http' || s === 'tui').join(', ')})` : 'not attached in this process'}`,
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
        summary: question ? 'HTTP/TUI can answer permission requests' : 'none attached',
      },
    ],
  };
}

function handoffRecovery(app: App, familyIds: string[]): Check {
  const db = app.db;
  const marks = familyIds.map(() => '?').join(', ');
  const has = (table: string) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
  const summaries = (
    db
      .prepare(
        `SELECT count(*) AS n FROM messages WHERE session_id IN (${marks}) AND parts LIKE '%"compaction"%'`,
      )
      .get(...familyIds) as { n: number }
  ).n;
  const checkpoints = has('checkpoints')
    ? (
        db
          .prepare(`SELECT count(*) AS n FROM checkpoints WHERE session_id IN (${marks})`)
          .get(...familyIds) as { n: number }
      ).n
    : 0;
  const capsules = summaries + checkpoints;
  const historian = app.tools.get('session_search') !== undefined;
  return {
    status: capsules > 0 && historian ? 'present' : capsules > 0 || historian ? 'partial' : 'missing',
    summary: `${summaries} compaction summary(ies) and ${checkpoints} checkpoint(s) as continuity capsules; historian retrieval (session_search) ${historian ? 'available' : 'absent'}`,
    sources: [
      {
        name: 'continuity_capsules',
        kind: 'table',
        durability: 'durable',
        summary: `${capsules} capsule(s)`,
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

function interruptibility(app: App, ledger: LedgerEvidence): Check {
  const cancel = app.tools.get('update_agent_run') !== undefined;
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
