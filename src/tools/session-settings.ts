/**
 * How a session is set up to run: its posture readout, its model and its reasoning effort.
 * @module
 */
import { z } from 'zod';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { workflowPhase } from '../sessions/session-views';
import { agentScope } from './agent-caller';
import { defineTool } from './core/define-tool';

const sessionIdField = () => sessionIdInput('current');

export const getSessionPostureStatus = defineTool({
  name: 'get_session_posture_status',
  family: 'sessions',
  tag: 'primitive',
  description:
    'How a session is set up to run: mode, agent, model (and where it comes from), reasoning effort, workflow phase, state and queue, permission posture (allowed tools, grants, pending requests, attached surfaces), context use and tool counts.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_get_session_posture_status' },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    const config = app.config;
    const kind = app.agent.kinds().find((k) => k.id === session.agent);
    const [model, modelSource] = session.model
      ? [session.model, 'session']
      : kind?.model
        ? [kind.model, `agents.${kind.id}.model`]
        : config.models.large
          ? [config.models.large, 'config models.large']
          : [null, 'none configured'];
    const state = await app.agent.state(session.id);
    const entries = app.funnel(await app.funnelContext(session.id));
    const lastAssistant = (await app.sessions.messages(session.id, { limit: 20 }))
      .reverse()
      .find((m) => m.role === 'assistant' && m.usage);
    const plan = session.metadata.plan as { revision?: number } | undefined;
    return {
      session_id: session.id,
      mode: session.mode,
      agent: session.agent,
      model: { selector: model, source: modelSource },
      reasoning_effort: session.reasoning_effort ?? kind?.reasoning_effort ?? null,
      workflow_phase: workflowPhase(session),
      has_plan: plan !== undefined,
      state: state.state,
      active_run_id: state.run_id ?? state.busy_elsewhere?.run_id ?? null,
      queue_length: state.queue_length,
      permissions: {
        allowed_tools: config.permissions.allowed_tools,
        auto_allow_read_only_bash: config.permissions.auto_allow_read_only_bash,
        unattended: config.permissions.unattended,
        grants: (await app.permissions.grants(session.id)).map((g) => ({ tool: g.tool, scope: g.scope })),
        pending: (await app.permissions.listPending(session.id)).length,
        attached: app.permissions.attachments(session.id).map((a) => a.client),
      },
      context: {
        last_input_tokens: lastAssistant?.usage
          ? lastAssistant.usage.input_tokens + lastAssistant.usage.output_tokens
          : 0,
        compactions: typeof session.metadata.compactions === 'number' ? session.metadata.compactions : 0,
        auto_compact: config.options.auto_compact,
        compaction_threshold: config.options.compaction_threshold,
      },
      usage: {
        prompt_tokens: session.prompt_tokens,
        completion_tokens: session.completion_tokens,
        cost: session.cost,
      },
      tools: {
        effective: entries.filter((e) => e.effective).length,
        ask: entries.filter((e) => e.permission === 'ask').length,
        withheld: entries.filter((e) => e.registered && !e.effective).length,
      },
    };
  },
});

export const setSessionModel = defineTool({
  name: 'set_session_model',
  family: 'sessions',
  tag: 'primitive',
  description: 'Set the model of a session (its next runs), or clear it with null to use the defaults.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      model: z.string().min(1).nullable().describe('Model selector <provider>/<model>, or null to clear.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_set_session_model' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'change the model of');
    const resolved = input.model ? await app.models.resolve({ selector: input.model }) : undefined;
    const updated = await app.sessions.update(session.id, { model: resolved?.selector ?? null });
    return { session_id: session.id, model: updated.model, previous: session.model };
  },
});

export const setReasoningEffort = defineTool({
  name: 'set_reasoning_effort',
  family: 'sessions',
  tag: 'primitive',
  description:
    "Set how hard the model reasons in a session (minimal, low, medium, high), or none for the provider default. Mapped to each provider's own option.",
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      effort: z
        .enum(['none', 'minimal', 'low', 'medium', 'high'])
        .describe('Reasoning effort; none clears it.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_set_reasoning_effort' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'change the reasoning effort of');
    const effort = input.effort === 'none' ? null : input.effort;
    await app.sessions.update(session.id, { reasoning_effort: effort });
    return { session_id: session.id, reasoning_effort: effort, previous: session.reasoning_effort };
  },
});
