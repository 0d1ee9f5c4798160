/**
 * Quality tools: the status reads `get_apply_patch_status`, `get_edit_capsules_status`,
 * `get_finding_lifecycle_status` (`svc config show-finding-lifecycle`) and
 * `list_recent_finding_lifecycle_events`; `edit_capsule` (list, show) and `revert_edit_capsule`;
 * `finding` (report, acknowledge, waive, resolve, mark_stale, reopen). The domain is
 * src/quality/ (`app.quality`); apply_patch itself is a mode of `edit`.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { ApplyPatchStatus } from '../quality/apply-patch';
import type { EditCapsule, EditCapsulesStatus } from '../quality/capsules';
import { classifyShell } from '../quality/checks';
import { FINDING_KINDS, FINDING_STATES, type FindingLifecycleStatus } from '../quality/findings';
import { defineTool, type ToolContext } from './core/define-tool';
import { opContext } from './core/op-context';

const sessionFilter = () =>
  z.string().min(1).optional().describe('Only what happened in this session. Omit for the whole workspace.');

export const getApplyPatchStatus = defineTool({
  name: 'get_apply_patch_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Posture of apply_patch (edit with mode apply_patch): the patch formats read (Codex *** Begin Patch envelopes and unified diffs), how hunks are matched, counts of patches applied and failed (by format and failure reason), and the most recent failures with the file, hunk and reason.',
  input: () =>
    z.strictObject({
      limit: z.number().int().min(1).max(50).default(5).describe('Most recent failures to list (default 5).'),
      session_id: sessionFilter(),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_apply_patch_status' },
  examples: [{}, { limit: 1 }],
  run: async (ctx, input) =>
    await ctx.app.quality.patches.status({ limit: input.limit, sessionId: input.session_id }),
  toModelOutput: (r: ApplyPatchStatus) =>
    `apply_patch: ${r.counts.applied} applied, ${r.counts.failed} failed (${r.counts.files_changed} files changed, ${r.counts.fuzzy_hunks} loosely matched hunks).${r.recent_failures.length ? `\nRecent failures:\n${r.recent_failures.map((f) => `- ${f.message}`).join('\n')}` : ''}`,
});

export const getEditCapsulesStatus = defineTool({
  name: 'get_edit_capsules_status',
  family: 'status',
  tag: 'primitive',
  description:
    "Edit capsules (options.edit_capsules): whether they are enabled, capsule counts (recording, open, reverted, with a checkpoint) with their files and line stats, and the most recent capsules. A capsule is one agent run's file changes, reviewable with edit_capsule and revertible with revert_edit_capsule.",
  input: () =>
    z.strictObject({
      limit: z
        .number()
        .int()
        .min(1)
        .max(100)
        .default(10)
        .describe('Most recent capsules to list (default 10).'),
      session_id: sessionFilter(),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_edit_capsules_status' },
  examples: [{}, { limit: 1 }],
  run: async (ctx, input) =>
    await ctx.app.quality.capsules.status({ limit: input.limit, sessionId: input.session_id }),
  toModelOutput: (r: EditCapsulesStatus) =>
    `Edit capsules are ${r.enabled ? 'on' : 'off'} (options.edit_capsules): ${r.counts.total} capsules (${r.counts.open} open, ${r.counts.reverted} reverted, ${r.counts.recording} recording).${r.recent.length ? `\n${r.recent.map(capsuleLine).join('\n')}` : ''}`,
});

export const editCapsuleInput = () =>
  z.strictObject({
    action: z
      .enum(['list', 'show'])
      .default('list')
      .describe('list: capsules, newest first. show: one capsule with its files and combined diff.'),
    capsule_id: z.string().min(1).optional().describe('show: the capsule id (cap_…).'),
    session_id: sessionFilter(),
    status: z
      .enum(['recording', 'open', 'reverted'])
      .optional()
      .describe('list: only capsules in this state.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(200)
      .default(20)
      .describe('list: most capsules to return (default 20).'),
  });

export const editCapsule = defineTool({
  name: 'edit_capsule',
  family: 'quality',
  tag: 'primitive',
  description:
    "Review edit capsules: list them, or show one (files, line stats, the run, the checkpoint it can be restored to, and the diff of the run's changes). Revert one with revert_edit_capsule.",
  input: editCapsuleInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_edit_capsule',
    cli: [
      { command: 'capsules list', fixed: { action: 'list' }, description: 'List edit capsules.' },
      {
        command: 'capsules show',
        fixed: { action: 'show' },
        args: ['capsule_id'],
        description: 'Show an edit capsule and its diff.',
        text: (r: EditCapsule & { diff: string }) => `${capsuleLine(r)}\n${r.diff}`,
      },
    ],
  },
  examples: [{ action: 'list' }],
  async run(ctx, input) {
    if (input.action === 'list') {
      return {
        capsules: await ctx.app.quality.capsules.list({
          sessionId: input.session_id,
          status: input.status,
          limit: input.limit,
        }),
      };
    }
    if (!input.capsule_id)
      throw new SvcError('invalid_input', 'capsule_id: show needs the capsule id; list shows them');
    return ctx.app.quality.capsules.show(input.capsule_id);
  },
});

export const revertEditCapsule = defineTool({
  name: 'revert_edit_capsule',
  family: 'quality',
  tag: 'primitive',
  description:
    "Revert an edit capsule: write every file the capsule's run changed back to its content before the run (created files are deleted, deleted ones restored). Refused, with nothing written, when a file changed after the run; then revert later capsules first or restore the capsule's checkpoint. Asks for approval with the diff.",
  input: () => z.strictObject({ capsule_id: z.string().min(1).describe('The capsule to revert (cap_…).') }),
  mutates: true,
  // Asks itself (through the change committer): the agent loop does not ask again.
  asksPermission: true,
  surfaces: {
    mcp: 'svc_revert_edit_capsule',
    cli: { command: 'capsules revert', args: ['capsule_id'], description: 'Revert an edit capsule.' },
  },
  run: async (ctx, input) =>
    ctx.app.quality.capsules.revert(input.capsule_id, opContext(ctx, 'revert_edit_capsule')),
  toModelOutput: (r: { capsule: EditCapsule; files: { path: string; change: string }[] }) =>
    `Reverted edit capsule ${r.capsule.id} (run ${r.capsule.run_id}): ${r.files.map((f) => `${f.path} (${f.change})`).join(', ')}.`,
});

export const getFindingLifecycleStatus = defineTool({
  name: 'get_finding_lifecycle_status',
  family: 'status',
  tag: 'primitive',
  description:
    'The finding lifecycle: problems observed during work (failing test, lint and typecheck runs, diagnostics errors, reported findings) counted by state (open, acknowledged, fixed, waived, stale), the open and acknowledged ones with their evidence, and how each kind is observed and fixed.',
  input: () =>
    z.strictObject({
      limit: z
        .number()
        .int()
        .min(1)
        .max(200)
        .default(20)
        .describe('Most open findings to list (default 20).'),
      session_id: sessionFilter(),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_finding_lifecycle_status',
    cli: {
      command: 'config show-finding-lifecycle',
      description: 'finding counts by state and the open findings (read-only)',
      text: renderFindingStatus,
    },
  },
  examples: [{}, { limit: 1 }],
  run: async (ctx, input) =>
    ctx.app.quality.findings.status({ limit: input.limit, sessionId: input.session_id }),
  toModelOutput: renderFindingStatus,
});

export const listRecentFindingLifecycleEvents = defineTool({
  name: 'list_recent_finding_lifecycle_events',
  family: 'status',
  tag: 'primitive',
  description:
    'The finding log, newest first: every state change of every finding (opened, acknowledged, fixed, waived, stale, reopened) with its reason, source (bash, diagnostics, agent, operator, file_change, sweep), session and run.',
  input: () =>
    z.strictObject({
      limit: z.number().int().min(1).max(500).default(20).describe('Most events to return (default 20).'),
      finding_id: z.string().min(1).optional().describe('Only the events of this finding.'),
      session_id: sessionFilter(),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_list_recent_finding_lifecycle_events' },
  examples: [{}, { limit: 5 }],
  run: async (ctx, input) =>
    ctx.app.quality.findings.events({
      limit: input.limit,
      findingId: input.finding_id,
      sessionId: input.session_id,
    }),
});

export const findingInput = () =>
  z.strictObject({
    action: z
      .enum(['report', 'acknowledge', 'waive', 'resolve', 'mark_stale', 'reopen'])
      .describe(
        'report: record a problem you observed. acknowledge: you are working on it. waive: accept it as is. resolve: a reported finding is fixed (check and diagnostic findings are fixed by a passing run). mark_stale: no longer relevant. reopen: a fixed, waived or stale finding is back.',
      ),
    finding_id: z.string().min(1).optional().describe('Every action but report: the finding (fnd_…).'),
    title: z.string().min(1).max(300).optional().describe('report: one line saying what is wrong.'),
    detail: z
      .string()
      .max(4000)
      .optional()
      .describe('report: evidence or explanation. Omit if the title says it all.'),
    path: z
      .string()
      .min(1)
      .optional()
      .describe('report: the file concerned, relative to the workspace root.'),
    line: z.number().int().min(1).optional().describe('report: the line in path (1-based).'),
    severity: z.enum(['error', 'warning']).default('error').describe('report: error (default) or warning.'),
    check: z
      .string()
      .min(1)
      .optional()
      .describe(
        'report: a test, lint or typecheck command whose passing run will mark the finding fixed (e.g. "npm test").',
      ),
    reason: z.string().max(500).optional().describe('Other actions: why, for the finding log.'),
  });

export const finding = defineTool({
  name: 'finding',
  family: 'quality',
  tag: 'primitive',
  description:
    'Report a problem you found in the workspace, or move a finding through its lifecycle (acknowledge, waive, resolve, mark_stale, reopen). Failing checks and diagnostics errors become findings by themselves; see get_finding_lifecycle_status.',
  input: findingInput,
  mutates: false,
  // Each call changes the finding log.
  parity: false,
  surfaces: { mcp: 'svc_finding' },
  async run(ctx, input) {
    const findings = ctx.app.quality.findings;
    const actor = {
      sessionId: ctx.sessionId,
      runId: ctx.runId,
      source: ctx.surface === 'agent' ? 'agent' : 'operator',
    };
    if (input.action !== 'report') {
      if (!input.finding_id)
        throw new SvcError('invalid_input', `finding_id: ${input.action} needs the finding id`);
      return findings.act(input.finding_id, input.action, input.reason, actor);
    }
    if (!input.title) throw new SvcError('invalid_input', 'title: report needs a one-line title');
    const path = input.path ? ctx.app.ws.paths.resolve(input.path).rel : undefined;
    const check = input.check ? await reportedCheck(ctx, input.check) : undefined;
    return findings.observe(
      {
        kind: 'reported',
        fingerprint: findings.newReportFingerprint(),
        title: input.title,
        detail: input.detail,
        severity: input.severity,
        path,
        line: input.line,
        checkKey: check?.key,
        checkCommand: input.check,
        checkKind: check ? [...new Set(check.checks.map((c) => c.kind))].join(',') : undefined,
      },
      actor,
    );
  },
});

export const qualityTools = [
  getApplyPatchStatus,
  getEditCapsulesStatus,
  editCapsule,
  revertEditCapsule,
  getFindingLifecycleStatus,
  listRecentFindingLifecycleEvents,
  finding,
];

async function reportedCheck(ctx: ToolContext, command: string) {
  const analysis = await ctx.app.ws.shell.analyze(command, ctx.sessionId);
  const cwd = ctx.app.ws.paths.display(ctx.app.ws.shell.cwd(ctx.sessionId));
  const check = classifyShell(
    analysis.commands.map((c) => c.argv),
    cwd,
  );
  if (!check?.conclusive) {
    throw new SvcError(
      'invalid_input',
      `check: "${command}" is not a test, lint or typecheck command whose exit code svc can read (e.g. npm test, npx vitest run, pytest, go test ./..., cargo test, tsc --noEmit, eslint .); leave check out to resolve the finding by hand`,
    );
  }
  return check;
}

function capsuleLine(c: EditCapsule): string {
  const files = c.files.map(
    (f) => `${f.path} (${f.change}${f.additions === null ? '' : ` +${f.additions} −${f.deletions}`})`,
  );
  return `${c.id} [${c.status}] run ${c.run_id}: ${files.join(', ') || 'no files yet'}${c.checkpoint_id ? ` — checkpoint ${c.checkpoint_id}` : ''}`;
}

function renderFindingStatus(r: FindingLifecycleStatus): string {
  const counts = FINDING_STATES.map((s) => `${r.counts[s]} ${s}`).join(', ');
  const active = FINDING_KINDS.map((k) => `${r.active_by_kind[k]} ${k}`).join(', ');
  const lines = [`findings: ${counts} (${r.counts.total} total); active by kind: ${active}`];
  if (r.open.length) {
    lines.push('open and acknowledged:');
    for (const f of r.open) {
      lines.push(`  ${f.id} [${f.kind}, ${f.state}] ${f.title} (seen ${f.occurrences}×)`);
    }
  } else {
    lines.push('no open findings');
  }
  lines.push(
    `finding log: ${r.events_total} events${r.last_event_at ? `, last at ${new Date(r.last_event_at).toISOString()}` : ''}; open findings go stale after ${r.stale_after_hours} h unseen`,
  );
  return lines.join('\n');
}
