/**
 * Runtime health status tools (family status): incidents, loop detection, length recovery,
 * compaction reactions, alerts, permission enforcement, workflow flow events and the bash sandbox.
 * Each reads real state (run ledger, session event log, config, the sandbox probe) through a read
 * model in src/health or src/sandbox. MCP names are `svc_<tool>`; CLI commands `svc health …`
 * and `svc config show-sandbox`.
 * @module
 */
import { z } from 'zod';
import { type AlertsStatus, alertsStatus } from '../health/alerts';
import { type CompactionReactionsStatus, compactionReactions } from '../health/compaction-reactions';
import { type EnforcementStatus, enforcementStatus } from '../health/enforcement';
import { FLOW_KINDS, type FlowAwarenessEvents, recentFlowAwarenessEvents } from '../health/flow-awareness';
import { type IncidentStatus, runtimeIncidentStatus } from '../health/incidents';
import { type LengthRecoveryStatus, lengthRecoveryStatus } from '../health/length-recovery';
import { type LoopDetectionStatus, loopDetectionStatus } from '../health/loop-detection';
import type { SandboxStatus } from '../sandbox/sandbox';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';

const sessionIdField = () =>
  sessionIdInput(
    'none',
    'Only this session and its sub-agent sessions. Omit for every session of the workspace.',
  );

const sinceHours = () =>
  z.number().int().min(1).max(8760).default(24).describe('How many recent hours to look at. Default 24.');
const limit = (fallback: number) =>
  z
    .number()
    .int()
    .min(1)
    .max(200)
    .default(fallback)
    .describe(`Most recent entries to list. Default ${fallback}.`);

const windowInput = () =>
  z.strictObject({
    session_id: sessionIdField(),
    since_hours: sinceHours(),
    limit: limit(10),
  });
const examples = [{}, { since_hours: 1, limit: 3 }];

const when = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());

export const getRuntimeIncidentStatus = defineTool({
  name: 'get_runtime_incident_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Runtime incidents from the run ledger and session event log: provider errors, unusable models, tool crashes (a tool threw an unexpected error), failed and interrupted runs; counts and the most recent ones.',
  input: windowInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_runtime_incident_status',
    cli: {
      command: 'health incidents',
      text: (r: IncidentStatus) =>
        [
          `incidents (last ${r.since_hours} h): ${r.status}, ${r.total} total`,
          `  ${Object.entries(r.counts)
            .map(([k, v]) => `${k} ${v}`)
            .join(' · ')}`,
          ...r.recent.map((i) => `  ${when(i.at)} ${i.kind.padEnd(17)} ${i.run_id} ${i.summary}`),
        ].join('\n'),
    },
  },
  examples,
  run: async (ctx, input) => await runtimeIncidentStatus(ctx.app, input),
});

export const getLoopDetectionStatus = defineTool({
  name: 'get_loop_detection_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Loop detection: its configuration (max repeats of the same call with the same result), every loop.detected in the run ledger, and the runs it stopped.',
  input: windowInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_loop_detection_status',
    cli: {
      command: 'health loop-detection',
      text: (r: LoopDetectionStatus) =>
        [
          `loop detection: max_repeats ${r.config.max_repeats}; ${r.detections.total} detection(s) in the last ${r.since_hours} h`,
          ...r.history.map((h) => `  ${when(h.at)} ${h.tool} ×${h.repeats} (run ${h.run_id})`),
          ...r.recent_stops.map((s) => `  stopped ${s.run_id}: ${s.reason}`),
        ].join('\n'),
    },
  },
  examples,
  run: async (ctx, input) => await loopDetectionStatus(ctx.app, input),
});

export const getLengthRecoveryStatus = defineTool({
  name: 'get_length_recovery_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Length recovery: when a model step stops at its output token limit the run continues the turn, up to options.length_recovery.max_attempts times. Configuration, counts and the recent runs (recovered, exhausted, not attempted).',
  input: windowInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_length_recovery_status',
    cli: {
      command: 'health length-recovery',
      text: (r: LengthRecoveryStatus) =>
        [
          `length recovery: ${r.config.enabled ? `on, up to ${r.config.max_attempts} continuation(s)` : 'off'}; ${r.counts.length_finishes} step(s) hit the output limit, ${r.counts.attempts} continuation(s)`,
          ...r.recent.map(
            (x) => `  ${x.run_id} ${x.outcome} (${x.attempts} attempt(s), run ${x.run_status})`,
          ),
        ].join('\n'),
    },
  },
  examples,
  run: async (ctx, input) => await lengthRecoveryStatus(ctx.app, input),
});

export const getCompactionReactions = defineTool({
  name: 'get_compaction_reactions',
  family: 'status',
  tag: 'primitive',
  description:
    'What happened after each compaction (auto, manual, health follow-on): tokens before and after, whether the run went on and completed, and the errors that followed; plus failed compactions.',
  input: windowInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_compaction_reactions',
    cli: {
      command: 'health compactions',
      text: (r: CompactionReactionsStatus) =>
        [
          `compactions (last ${r.since_hours} h): ${r.counts.compactions} (auto ${r.counts.auto}, manual ${r.counts.manual}, health ${r.counts.health_followon}), ${r.counts.failed} failed`,
          ...r.reactions.map(
            (x) =>
              `  ${when(x.at)} ${x.session_id} ${x.reason}: ${x.tokens_before} → ${x.tokens_after} tokens; ${x.continued_successfully === null ? 'outcome pending' : x.continued_successfully ? 'continued ok' : 'did not continue ok'}; ${x.subsequent_errors} error(s) after`,
          ),
        ].join('\n'),
    },
  },
  examples,
  run: async (ctx, input) => await compactionReactions(ctx.app, input),
});

export const getAlertsStatus = defineTool({
  name: 'get_alerts_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Active alerts derived from runtime signals over a recent window: token pressure, repeated run failures, provider errors, tool crashes, provider recovery, pack hook failures, capped health follow-ons. Thresholds come from options.alerts.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      window_minutes: z
        .number()
        .int()
        .min(1)
        .max(525_600)
        .optional()
        .describe('Minutes to look back. Omit for options.alerts.window_minutes (60).'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_alerts_status',
    cli: {
      command: 'health alerts',
      text: (r: AlertsStatus) =>
        r.active.length === 0
          ? `no active alerts (last ${r.window_minutes} min)`
          : [
              `${r.active.length} active alert(s) (last ${r.window_minutes} min)`,
              ...r.active.map((a) => `  ${a.severity.padEnd(8)} ${a.kind.padEnd(22)} ${a.summary}`),
            ].join('\n'),
    },
  },
  examples: [{}, { window_minutes: 5 }],
  run: async (ctx, input) => await alertsStatus(ctx.app, input),
});

export const getEnforcementStatus = defineTool({
  name: 'get_enforcement_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Permission enforcement: allowed_tools, bash rules, unattended policy and the sandbox; --yolo runs, session grants, permission asks/allows/denials, bash commands blocked, mutations refused by hard workspace claims, and tools a pack policy removes for the session.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      since_hours: sinceHours(),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_enforcement_status',
    cli: {
      command: 'health enforcement',
      text: (r: EnforcementStatus) =>
        [
          `enforcement (last ${r.since_hours} h): ${r.permissions.asks} ask(s), ${r.permissions.allowed.total} allowed, ${r.permissions.denied.total} denied, ${r.yolo.runs} --yolo run(s)`,
          `  allowed_tools: ${r.config.allowed_tools.join(', ') || '-'}; sandbox ${r.config.sandbox.mode}${r.config.sandbox.enforced ? ' (enforced)' : ''}`,
          `  bash blocked ${r.bash_blocks.count}; hard-claim refusals ${r.hard_claim_refusals.count}; grants ${r.grants.length}; pack removals ${r.pack_policy_removals.length}`,
        ].join('\n'),
    },
  },
  examples: [{}, { since_hours: 2 }],
  run: async (ctx, input) => await enforcementStatus(ctx.app, input, ctx.sessionId),
});

export const listRecentFlowAwarenessEvents = defineTool({
  name: 'list_recent_flow_awareness_events',
  family: 'status',
  tag: 'primitive',
  description:
    'Recent workflow-flow events from the session event log: phase changes, plan updates, prompt queue changes, claim negotiations and handoffs to sub-agent sessions, newest first.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      kinds: z
        .array(z.enum(FLOW_KINDS))
        .optional()
        .describe(
          'Only these kinds (phase_change, plan_update, queue_change, claim_negotiation, handoff). Omit for all.',
        ),
      after_id: z
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Only events with a larger event id (to poll for new ones). Omit for all.'),
      limit: limit(20),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_list_recent_flow_awareness_events',
    cli: {
      command: 'health flow',
      text: (r: FlowAwarenessEvents) =>
        r.events.length === 0
          ? 'no flow events'
          : r.events
              .map((e) => `${e.id} ${when(e.at)} ${e.session_id} ${e.kind.padEnd(17)} ${e.summary}`)
              .join('\n'),
    },
  },
  examples: [{}, { kinds: ['handoff', 'queue_change'], limit: 5 }],
  run: async (ctx, input) => await recentFlowAwarenessEvents(ctx.app, input),
});

export const sandboxStatus = defineTool({
  name: 'sandbox_status',
  family: 'status',
  tag: 'primitive',
  description:
    'The command sandbox: mode (auto, bwrap or off), state (active, fallback, off or unavailable) and why, the install command when bubblewrap is missing, what a sandboxed command gets bound (workspace read-write, the rest read-only, private /tmp, protected locations hidden), the network policy, the environment commands get (names only), and the bash safety rules in force.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_sandbox_status',
    cli: {
      command: 'config show-sandbox',
      text: (r: SandboxStatus) =>
        [
          `sandbox: mode ${r.mode}${r.enforced ? ' (enforced)' : ''}; ${r.message}`,
          `state: ${r.state}: ${r.reason}${r.install ? `; install it: ${r.install}` : ''}`,
          `bwrap: ${r.bwrap.path ? `${r.bwrap.path} ${r.bwrap.version ?? ''}`.trim() : 'not found'}${r.bwrap.usable ? ', usable' : `, not usable: ${r.bwrap.error}`}`,
          `network: ${r.network}`,
          'binds:',
          ...r.binds.map((b) => `  ${b.access.padEnd(10)} ${b.path}  (${b.why})`),
          'protected (no command sees them, no tool reads or writes them):',
          ...r.protected_paths.map((p) => `  ${p.label}  (${p.why}${p.exists ? '' : ', not present'})`),
          `environment: the allowlist (${r.env.allowlist.join(' ')})${r.env.include.length ? ` + include ${r.env.include.join(' ')}` : ''}${r.env.set.length ? ` + set ${r.env.set.join(' ')}` : ''}; dropped as secret: ${r.env.dropped.join(' ') || 'none'}`,
          `bash rules: deny [${r.bash_rules.bash_deny.join(', ')}], allow [${r.bash_rules.bash_allow.join(', ')}], read-only auto-allow ${r.bash_rules.auto_allow_read_only_bash ? 'on' : 'off'}, outside workspace ${r.bash_rules.allow_outside_workspace ? 'allowed' : 'refused'}`,
          ...r.bash_rules.always_blocked.map((rule) => `  always blocked: ${rule}`),
        ].join('\n'),
    },
  },
  run: async (ctx) => ctx.app.sandbox.status(),
});

export const healthTools = [
  getRuntimeIncidentStatus,
  getLoopDetectionStatus,
  getLengthRecoveryStatus,
  getCompactionReactions,
  getAlertsStatus,
  getEnforcementStatus,
  listRecentFlowAwarenessEvents,
  sandboxStatus,
];
