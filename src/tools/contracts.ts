/**
 * Contracts (spec, Staged workflow and planning: `contract_rerun`, `contract_list_obligations`,
 * `contract_waive_obligation`; TOOLS-42) and `quality_gates_posture` (Config and status reads,
 * TOOLS-32). A contract is the workspace's `[contracts.<id>]` obligations plus the ones attached to
 * a session; work counts as done when every obligation passed or was waived.
 * @module
 */
import { z } from 'zod';
import type { CommandRunner } from '../contracts/contract-service';
import { qualityGatesPosture } from '../contracts/quality-gates';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import type { BashResult } from '../workspace/shell';
import { agentScope } from './agent-caller';
import { type AnyTool, defineTool, type ToolContext } from './core/define-tool';
import { opContext } from './core/op-context';

const sessionIdField = () =>
  sessionIdInput(
    'context-or-none',
    "Session whose contract to use (workspace obligations plus the session's own). Omit for the session you run in, or the workspace contract outside a session.",
  );

export const contractListObligations = defineTool({
  name: 'contract_list_obligations',
  family: 'planning',
  tag: 'primitive',
  description:
    'List the contract obligations that must hold before work counts as done (tests and lint commands, files that must exist, no open todo markers, an approved plan): each with its status (passed, failed, waived, pending), last result and waiver, and the overall state.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_contract_list_obligations', cli: { command: 'contract list' } },
  run: async (ctx, input) => await ctx.app.contracts.list(await agentOrCurrentSession(ctx, input.session_id)),
});

const obligationInput = () =>
  z
    .record(z.string(), z.record(z.string(), z.unknown()))
    .describe(
      'Obligations to add to the session\'s contract first, by id: {"tests": {"kind": "command", "command": "npm test"}}. Kinds: command (command, timeout_seconds), file_exists (path), no_markers (marker_kind, path), plan_approved.',
    );

export const contractRerun = defineTool({
  name: 'contract_rerun',
  family: 'planning',
  tag: 'primitive',
  description:
    'Evaluate the contract now and record the results: run its commands (each asks like bash does), check its files, markers and plan approval. Optionally attach new obligations to the session first, or evaluate only some obligations.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      obligation_ids: z
        .array(z.string().min(1))
        .min(1)
        .optional()
        .describe('Only these obligations (default: every enabled one).'),
      attach: obligationInput().optional(),
    }),
  mutates: true,
  asksPermission: true,
  surfaces: {
    mcp: 'svc_contract_rerun',
    cli: { command: 'contract rerun', prepare: (input) => parseAttach(input) },
  },
  parity: false,
  run: async (ctx, input) => {
    const sessionId = await agentOrCurrentSession(ctx, input.session_id);
    if (sessionId) await agentScope(ctx, sessionId, 'evaluate or change the contract of');
    if (input.attach) {
      if (!sessionId)
        throw new SvcError(
          'invalid_input',
          'attach: obligations attach to a session; give session_id (workspace obligations live in [contracts] config)',
        );
      await ctx.app.contracts.attach(sessionId, input.attach);
    }
    return ctx.app.contracts.rerun(
      { session_id: sessionId, obligation_ids: input.obligation_ids },
      commandRunner(ctx),
    );
  },
});

export const contractWaiveObligation = defineTool({
  name: 'contract_waive_obligation',
  family: 'planning',
  tag: 'primitive',
  description:
    'Waive one contract obligation with a reason, so it no longer blocks the contract (recorded with who waived it and when). Asks the operator first. Without a session it waives a workspace obligation everywhere.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      obligation_id: z.string().min(1).describe('The obligation to waive (see contract_list_obligations).'),
      reason: z.string().min(1).max(2000).describe('Why it may be skipped; kept with the waiver.'),
    }),
  mutates: false,
  asksPermission: true,
  surfaces: {
    mcp: 'svc_contract_waive_obligation',
    cli: { command: 'contract waive', args: ['obligation_id'] },
  },
  parity: false,
  run: async (ctx, input) => {
    const sessionId = await agentOrCurrentSession(ctx, input.session_id);
    if (sessionId) await agentScope(ctx, sessionId, 'waive the contract of');
    const contract = await ctx.app.contracts.list(sessionId);
    const obligation = contract.obligations.find((o) => o.id === input.obligation_id);
    if (!obligation) {
      throw new SvcError(
        'not_found',
        `obligation_id: no obligation "${input.obligation_id}"; known: ${contract.obligations.map((o) => o.id).join(', ') || 'none'}`,
      );
    }
    await ctx.ask({
      tool: 'contract_waive_obligation',
      title: `waive contract obligation "${obligation.id}" (${obligation.kind}${obligation.status === 'failed' ? ', currently failing' : ''}): ${input.reason.slice(0, 120)}`,
      details: {
        obligation_id: obligation.id,
        kind: obligation.kind,
        status: obligation.status,
        reason: input.reason,
        session_id: sessionId ?? null,
      },
    });
    return await ctx.app.contracts.waive({
      session_id: sessionId,
      obligation_id: input.obligation_id,
      reason: input.reason,
      by: ctx.surface,
    });
  },
});

export const qualityGatesPostureTool = defineTool({
  name: 'quality_gates_posture',
  family: 'status',
  tag: 'primitive',
  description:
    'The quality gates in force and how they last went: contract command obligations (enforced by contract_rerun) and the check scripts the project defines (package.json test/lint/typecheck, Makefile, cargo, go), each with its last result.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_quality_gates_posture', cli: { command: 'quality-gates' } },
  run: async (ctx, input) =>
    await qualityGatesPosture(
      ctx.app.workspace,
      ctx.app.contracts,
      await agentOrCurrentSession(ctx, input.session_id),
    ),
});

/** Command obligations run through the workspace shell: same analysis, guards and asks as bash. */
function commandRunner(ctx: ToolContext): CommandRunner {
  return async (command, timeoutSeconds) => {
    const result = (await ctx.app.ws.shell.run(
      { command, timeout_seconds: timeoutSeconds, description: 'contract obligation' },
      opContext(ctx, 'contract_rerun'),
    )) as BashResult;
    return {
      exit_code: result.exit_code,
      output: result.output,
      timed_out: result.timed_out,
      duration_ms: result.duration_ms,
    };
  };
}

/** The named session, else the session the agent runs in; none means the workspace contract. */
async function agentOrCurrentSession(
  ctx: ToolContext,
  sessionId: string | undefined,
): Promise<string | undefined> {
  const resolved = await resolveSession(
    ctx.app,
    { session_id: sessionId },
    { onMissing: 'context-or-none', context: ctx.sessionId, onUnknown: 'unchecked' },
  );
  return resolved.session_id ?? undefined;
}

function parseAttach(input: Record<string, unknown>): Record<string, unknown> {
  if (typeof input.attach !== 'string') return input;
  try {
    return { ...input, attach: JSON.parse(input.attach) };
  } catch {
    throw new SvcError('invalid_input', '--attach: expected a JSON object of obligations by id');
  }
}

export const contractTools = [
  contractListObligations,
  contractRerun,
  contractWaiveObligation,
  qualityGatesPostureTool,
] as AnyTool[];
