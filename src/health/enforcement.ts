/**
 * `get_enforcement_status`: how permissions are enforced and what enforcement did. Config posture
 * (allowed_tools, bash rules, unattended, disabled tools, the sandbox), then evidence from the run
 * ledger over the window: permission asks, allows (by way: allowed_tools, yolo, session_grant,
 * read_only, operator), denials (operator, cancelled, unattended), `--yolo` runs, session grants,
 * bash commands blocked by analysis (`bash_blocked`), mutations refused by another session's hard
 * workspace claim, and the tools an active operating pack's policy removes for the session.
 * @module
 */
import type { PermissionService } from '../permissions/permission-service';
import type { Sandbox } from '../sandbox/sandbox';
import { clip, type HealthReadoutDeps, ledgerEvents, runs, scopeOf } from './evidence';

/** One tool of a session's effective tool set, as the funnel (tools/core/funnel.ts) reports it. */
export interface FunnelEntryView {
  name: string;
  removed_by: string | null;
  reason: string | null;
}

export interface EnforcementDeps extends HealthReadoutDeps {
  readonly sandbox: Pick<Sandbox, 'status'>;
  readonly permissions: Pick<PermissionService, 'grants' | 'allGrants' | 'pending'>;
  readonly claims: { posture(): Promise<{ hard: number }> };
  /** The funnel context of a session (its mode, phase, agent and policy layers). */
  funnelContext(sessionId?: string): Promise<object>;
  /** The session's tool set after every funnel stage. */
  funnel(context?: object): FunnelEntryView[];
}

type Via = 'allowed_tools' | 'yolo' | 'session_grant' | 'read_only' | 'operator';

export interface EnforcementStatus {
  session_id: string | null;
  since_hours: number;
  config: {
    allowed_tools: string[];
    disabled_tools: string[];
    bash_allow: string[];
    bash_deny: string[];
    auto_allow_read_only_bash: boolean;
    allow_outside_workspace: boolean;
    unattended: 'fail' | 'wait';
    sandbox: { mode: 'auto' | 'bwrap' | 'off'; enforced: boolean };
  };
  yolo: { runs: number; last_run_id: string | null };
  grants: { session_id: string; tool: string; scope: string; created_at: number }[];
  permissions: {
    asks: number;
    pending: number;
    allowed: { total: number } & Record<Via, number>;
    denied: { total: number; operator: number; cancelled: number; unattended: number };
  };
  bash_blocks: { count: number; recent: { at: number; run_id: string; reason: string }[] };
  hard_claim_refusals: {
    count: number;
    active_hard_claims: number;
    recent: { at: number; run_id: string; tool: string; summary: string }[];
  };
  /** Tools the session's active operating pack removes (the funnel's agent_policy stage). */
  pack_policy_removals: { tool: string; source: string; reason: string }[];
}

const RECENT = 5;

export async function enforcementStatus(
  app: EnforcementDeps,
  input: { session_id?: string; since_hours: number },
  defaultSession?: string,
): Promise<EnforcementStatus> {
  const since = app.clock.now() - input.since_hours * 3_600_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const config = app.config;
  const sandbox = app.sandbox.status();

  const allowed = { total: 0, allowed_tools: 0, yolo: 0, session_grant: 0, read_only: 0, operator: 0 };
  for (const event of await ledgerEvents(app, scope, ['permission.allowed'])) {
    const via = String(event.payload.via) as Via;
    if (via in allowed) allowed[via]++;
    allowed.total++;
  }
  const denied = { total: 0, operator: 0, cancelled: 0, unattended: 0 };
  for (const event of await ledgerEvents(app, scope, ['permission.resolved', 'permission.unattended'])) {
    if (event.type === 'permission.unattended') denied.unattended++;
    else if (event.payload.decision === 'deny') {
      if (event.payload.by === 'cancel') denied.cancelled++;
      else denied.operator++;
    } else {
      allowed.operator++;
      allowed.total++;
      continue;
    }
    denied.total++;
  }
  const asks = (await ledgerEvents(app, scope, ['permission.requested'])).length;

  const yoloRuns = await runs(app, scope, { yolo: true });
  const blocks = await ledgerEvents(app, scope, ['bash_blocked']);
  const claimRefusals = await ledgerEvents(app, scope, ['tool.finished'], {
    payloadEquals: { error_code: 'conflict' },
    payloadContains: { error: 'hard workspace claim' },
  });
  const sessionId = input.session_id ?? defaultSession;
  const grants = sessionId ? await app.permissions.grants(sessionId) : await app.permissions.allGrants();

  return {
    session_id: input.session_id ?? null,
    since_hours: input.since_hours,
    config: {
      allowed_tools: config.permissions.allowed_tools,
      disabled_tools: config.options.disabled_tools,
      bash_allow: config.permissions.bash_allow,
      bash_deny: config.permissions.bash_deny,
      auto_allow_read_only_bash: config.permissions.auto_allow_read_only_bash,
      allow_outside_workspace: config.permissions.allow_outside_workspace,
      unattended: config.permissions.unattended,
      sandbox: { mode: sandbox.mode, enforced: sandbox.enforced },
    },
    yolo: { runs: yoloRuns.length, last_run_id: yoloRuns[0]?.id ?? null },
    grants: grants.map((g) => ({
      session_id: g.session_id,
      tool: g.tool,
      scope: g.scope,
      created_at: g.created_at,
    })),
    permissions: {
      asks,
      pending: app.permissions.pending(sessionId).length,
      allowed,
      denied,
    },
    bash_blocks: {
      count: blocks.length,
      recent: blocks.slice(0, RECENT).map((e) => ({
        at: e.created_at,
        run_id: e.run_id,
        reason: clip(e.payload.reason, 300),
      })),
    },
    hard_claim_refusals: {
      count: claimRefusals.length,
      active_hard_claims: (await app.claims.posture()).hard,
      recent: claimRefusals.slice(0, RECENT).map((e) => ({
        at: e.created_at,
        run_id: e.run_id,
        tool: String(e.payload.tool ?? ''),
        summary: app.redactor.string(clip(e.payload.error, 300)),
      })),
    },
    pack_policy_removals: sessionId ? await packRemovals(app, sessionId) : [],
  };
}

async function packRemovals(
  app: EnforcementDeps,
  sessionId: string,
): Promise<EnforcementStatus['pack_policy_removals']> {
  return app
    .funnel(await app.funnelContext(sessionId))
    .filter((entry) => entry.removed_by === 'agent_policy' && entry.reason?.startsWith('pack '))
    .map((entry) => {
      const reason = entry.reason ?? '';
      const colon = reason.indexOf(': ');
      return {
        tool: entry.name,
        source: colon === -1 ? reason : reason.slice(0, colon),
        reason: colon === -1 ? reason : reason.slice(colon + 2),
      };
    })
    .sort((a, b) => a.tool.localeCompare(b.tool));
}
