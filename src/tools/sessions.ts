/**
 * Sessions family: create, switch, list, get, update, delete sessions; the `message` tool (send,
 * list, inspect, update, delete); search; the prompt queue (`queue_enqueue`,
 * `get_prompt_queue_status`: the same queue as TUI ctrl+enter and `/enqueue`); the session's
 * posture; its model and reasoning effort. Thin: the work is in `app.agent` and `app.sessions`.
 * @module
 */
import { z } from 'zod';
import { agentKind } from '../agent/agent-kinds';
import { textOf } from '../agent/history';
import { messageView } from '../agent/views';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import type { MessagePart } from '../sessions/session-store';
import { sessionSummary, sessionView, workflowPhase } from '../sessions/session-views';
import { defineTool } from './core/define-tool';
import type { ToolHost } from './core/types';
import { route, SESSION_ROUTES } from './session-routes';

const sessionIdField = sessionIdInput('current');

const busyGuard = (app: ToolHost, sessionId: string, what: string) => {
  const state = app.agent.state(sessionId);
  if (state.state !== 'idle' || state.busy_elsewhere) {
    throw new SvcError(
      'conflict',
      `session ${sessionId} has an active run; ${what} when it is idle (wait for the run or cancel it)`,
    );
  }
};

export const createSession = defineTool({
  name: 'create_session',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Create a session (a child of another with parent_id). Optionally make it the current session.',
  input: z.strictObject({
    title: z.string().max(200).optional().describe('Session title. Omit to take it from the first prompt.'),
    parent_id: z.string().min(1).optional().describe('Parent session id for a child session.'),
    agent: z
      .string()
      .min(1)
      .optional()
      .describe('Default agent kind of its runs (build, plan, …). Default build.'),
    model: z.string().min(1).optional().describe('Model selector <provider>/<model> for its runs.'),
    mode: z.enum(['build', 'plan']).optional().describe('Session mode; plan withholds mutating tools.'),
    switch: z.boolean().default(false).describe('Also make it the current session.'),
  }),
  mutates: false,
  surfaces: { mcp: 'svc_create_session', http: { ...route(SESSION_ROUTES.create), status: 201 } },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: (ctx, input) => {
    const { app } = ctx;
    if (input.agent) agentKind(app.config, input.agent, 'primary');
    const session = app.agent.createSession({
      title: input.title,
      parent_id: input.parent_id,
      agent: input.agent,
      model: input.model,
      mode: input.mode,
    });
    if (input.switch) app.agent.setCurrentSession(session.id);
    return { session: sessionView(app, session), current: input.switch };
  },
});

export const switchSession = defineTool({
  name: 'switch_session',
  family: 'sessions',
  tag: 'primitive',
  description: 'Make a session the current one (the default of session tools and of svc run --continue).',
  input: z.strictObject({ session_id: sessionIdInput('required', 'The session to switch to.') }),
  mutates: false,
  surfaces: { mcp: 'svc_switch_session', cli: { command: 'session switch', args: ['session_id'] } },
  // An action, not a read: nothing for the parity walker to compare.
  parity: false,
  run: (ctx, input) => {
    const { app } = ctx;
    const previous = app.agent.currentSession();
    const session = app.sessions.require(input.session_id);
    app.agent.setCurrentSession(session.id);
    return { session_id: session.id, previous_session_id: previous, session: sessionView(app, session) };
  },
});

export const listSessions = defineTool({
  name: 'list_sessions',
  family: 'sessions',
  tag: 'primitive',
  description: 'Sessions, most recently updated first, with their state, queue length and usage.',
  input: z.strictObject({
    limit: z.number().int().min(1).max(500).default(50).describe('Most sessions to return.'),
    offset: z.number().int().min(0).default(0).describe('Sessions to skip (paging).'),
    parent_id: z.string().min(1).optional().describe('Only the children of this session.'),
    roots_only: z.boolean().default(false).describe('Only top-level sessions (no sub-agent sessions).'),
  }),
  mutates: false,
  surfaces: {
    mcp: 'svc_list_sessions',
    http: route(SESSION_ROUTES.list),
    cli: {
      command: 'session list',
      text: (r: { sessions: ReturnType<typeof sessionView>[]; current_session_id: string | null }) =>
        r.sessions.length === 0
          ? 'no sessions yet; start one with svc run "<prompt>"'
          : r.sessions
              .map(
                (s) =>
                  `${s.id === r.current_session_id ? '*' : ' '} ${s.id}  ${s.state.padEnd(10)} ${String(s.message_count).padStart(4)} msgs  ${s.title || '(untitled)'}`,
              )
              .join('\n'),
    },
  },
  run: (ctx, input) => {
    const { app } = ctx;
    const parent = input.parent_id ?? (input.roots_only ? null : undefined);
    const sessions = app.sessions.list({ limit: input.limit, offset: input.offset, parent_id: parent });
    return {
      sessions: sessions.map((s) => sessionView(app, s)),
      count: sessions.length,
      total: app.sessions.count(),
      current_session_id: app.agent.currentSession(),
    };
  },
});

export const getSession = defineTool({
  name: 'get_session',
  family: 'sessions',
  tag: 'primitive',
  description: 'One session: its fields, state, queue, children, last run and pending permission requests.',
  input: z.strictObject({ session_id: sessionIdField }),
  mutates: false,
  surfaces: { mcp: 'svc_get_session', http: { ...route(SESSION_ROUTES.get), params: { id: 'session_id' } } },
  examples: [{ session_id: 'ses_0001' }],
  run: (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    const last = app.runs.list({ session_id: session.id, limit: 1 })[0];
    return {
      session: sessionView(app, session),
      children: app.sessions.list({ parent_id: session.id, limit: 100 }).map(sessionSummary),
      last_run: last
        ? { id: last.id, status: last.status, agent: last.agent, steps: last.steps, reason: last.reason }
        : null,
      queue: app.agent.queue(session.id).items,
      pending_permissions: app.permissions.pending(session.id).map((p) => ({
        request_id: p.request_id,
        tool: p.tool,
        title: p.title,
      })),
    };
  },
});

export const updateSession = defineTool({
  name: 'update_session',
  family: 'sessions',
  tag: 'primitive',
  description: 'Change a session: title, mode (build or plan), default agent kind, model, reasoning effort.',
  input: z.strictObject({
    session_id: sessionIdField,
    title: z.string().max(200).optional().describe('New title.'),
    mode: z.enum(['build', 'plan']).optional().describe('Session mode; plan withholds mutating tools.'),
    agent: z.string().min(1).optional().describe('Default agent kind of its runs.'),
    model: z.string().min(1).nullable().optional().describe('Model selector, or null to use the defaults.'),
    reasoning_effort: z
      .enum(['minimal', 'low', 'medium', 'high'])
      .nullable()
      .optional()
      .describe('Reasoning effort, or null for the provider default.'),
  }),
  mutates: false,
  surfaces: {
    mcp: 'svc_update_session',
    http: { ...route(SESSION_ROUTES.update), params: { id: 'session_id' } },
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    if (input.agent) agentKind(app.config, input.agent, 'primary');
    if (input.model) await app.models.resolve({ selector: input.model });
    const { session_id: _ignored, ...patch } = input;
    if (Object.keys(patch).length === 0) {
      throw new SvcError(
        'invalid_input',
        'nothing to update: pass title, mode, agent, model or reasoning_effort',
      );
    }
    return { session: sessionView(app, app.sessions.update(session.id, patch)), changed: Object.keys(patch) };
  },
});

export const deleteSession = defineTool({
  name: 'delete_session',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Delete a session with its child sessions, messages and runs. Refused while a run of it is active.',
  input: z.strictObject({ session_id: sessionIdInput('required', 'The session to delete.') }),
  mutates: true,
  surfaces: {
    mcp: 'svc_delete_session',
    cli: { command: 'session delete', args: ['session_id'] },
    http: { ...route(SESSION_ROUTES.delete), params: { id: 'session_id' } },
  },
  run: (ctx, input) => {
    const { app } = ctx;
    const family = app.sessions.family(input.session_id);
    if (family.length === 0) app.sessions.require(input.session_id);
    if (ctx.sessionId && family.some((s) => s.id === ctx.sessionId)) {
      throw new SvcError(
        'conflict',
        `session_id: ${input.session_id} is (or contains) the session this run works in`,
      );
    }
    for (const member of family) busyGuard(app, member.id, 'delete it');
    const current = app.agent.currentSession();
    const deleted = app.sessions.delete(input.session_id);
    if (current && deleted.includes(current)) app.agent.setCurrentSession(null);
    return { deleted, count: deleted.length };
  },
});

const messageActions = ['send', 'list', 'inspect', 'update', 'delete'] as const;

export const message = defineTool({
  name: 'message',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Messages of a session. send: a prompt (starts a run, or queues it behind the active one); list: the messages; inspect: one message; update: replace the text of a message; delete: remove a message. update and delete are refused while a run is active.',
  input: z.strictObject({
    action: z.enum(messageActions).describe('send, list, inspect, update or delete.'),
    session_id: sessionIdField,
    message_id: z.string().min(1).optional().describe('The message (inspect, update, delete).'),
    text: z.string().min(1).optional().describe('The prompt (send) or the new text (update).'),
    limit: z.number().int().min(1).max(1000).default(50).describe('list: most recent messages to return.'),
    wait: z
      .boolean()
      .default(false)
      .describe('send: wait for the run to finish and return its answer (always on from the CLI).'),
    agent: z.string().min(1).optional().describe('send: agent kind for this run.'),
  }),
  mutates: false,
  surfaces: {
    mcp: 'svc_message',
    http: [
      { ...route(SESSION_ROUTES.messages), params: { id: 'session_id' }, fixed: { action: 'list' } },
      {
        ...route(SESSION_ROUTES.send),
        params: { id: 'session_id' },
        fixed: { action: 'send' },
        status: 202,
        // The session API's body is `{ "prompt": "…" }` (the TUI attach client sends that); `text` works too.
        prepare: ({ prompt, ...input }) => (prompt === undefined ? input : { text: prompt, ...input }),
      },
    ],
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    switch (input.action) {
      case 'send': {
        if (!input.text) throw new SvcError('invalid_input', 'text: required for action send');
        const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
        const wait = input.wait || ctx.surface === 'cli';
        if (wait && session.id === ctx.sessionId) {
          throw new SvcError(
            'invalid_input',
            'wait: cannot wait for a prompt sent to the session this run works in (it runs after this run); send without wait',
          );
        }
        const sent = app.agent.send({
          sessionId: session.id,
          prompt: input.text,
          agent: input.agent,
          origin: ctx.surface,
        });
        if (!wait) return { action: 'send', ...sent };
        const result = await app.agent.wait(sent.run_id, { signal: ctx.signal });
        return { action: 'send', ...sent, result };
      }
      case 'list': {
        const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
        const messages = app.sessions.messages(session.id, { limit: input.limit });
        return {
          action: 'list',
          session_id: session.id,
          messages: messages.map(messageView),
          count: messages.length,
          total: app.sessions.messageCount(session.id),
        };
      }
      case 'inspect': {
        const found = requireMessage(app, input.message_id);
        return { action: 'inspect', message: messageView(found) };
      }
      case 'update': {
        const found = requireMessage(app, input.message_id);
        if (!input.text) throw new SvcError('invalid_input', 'text: required for action update');
        if (found.role !== 'user' && found.role !== 'assistant') {
          throw new SvcError('invalid_input', `message_id: a ${found.role} message has no text to update`);
        }
        busyGuard(app, found.session_id, 'edit its messages');
        const parts: MessagePart[] = [
          { type: 'text', text: input.text },
          ...found.parts.filter((p) => p.type !== 'text'),
        ];
        const updated = app.sessions.updateMessage(found.id, { parts });
        return { action: 'update', message: messageView(updated), previous_text: textOf(found.parts) };
      }
      case 'delete': {
        const found = requireMessage(app, input.message_id);
        busyGuard(app, found.session_id, 'delete its messages');
        app.sessions.deleteMessage(found.id);
        return { action: 'delete', deleted: found.id, session_id: found.session_id };
      }
      default: {
        const exhaustive: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${String(exhaustive)}`);
      }
    }
  },
});

function requireMessage(app: ToolHost, id: string | undefined) {
  if (!id) throw new SvcError('invalid_input', 'message_id: required for this action');
  const found = app.sessions.getMessage(id);
  if (!found) throw new SvcError('not_found', `message_id: no message "${id}"; see message action list`);
  return found;
}

export const sessionSearch = defineTool({
  name: 'session_search',
  family: 'sessions',
  tag: 'primitive',
  description: 'Find sessions whose title or messages contain the text (case-insensitive), newest first.',
  input: z.strictObject({
    query: z.string().min(1).describe('Text to look for.'),
    limit: z.number().int().min(1).max(200).default(20).describe('Most sessions to return.'),
  }),
  mutates: false,
  surfaces: {
    mcp: 'svc_session_search',
    cli: { command: 'session search', args: ['query'] },
    http: { method: 'GET', path: '/v1/session-search' },
  },
  examples: [{ query: 'test' }],
  run: (ctx, input) => {
    const results = ctx.app.sessions.search(input.query, { limit: input.limit });
    return {
      query: input.query,
      results: results.map((r) => ({
        session_id: r.session.id,
        title: r.session.title,
        updated_at: r.session.updated_at,
        snippet: r.snippet,
      })),
      count: results.length,
    };
  },
});

export const getPromptQueueStatus = defineTool({
  name: 'get_prompt_queue_status',
  family: 'sessions',
  tag: 'primitive',
  description:
    'The prompt queue (the same queue as TUI ctrl+enter, /enqueue and queue_enqueue): per session, its state, active run and queued prompts.',
  input: z.strictObject({
    session_id: sessionIdInput('none', 'One session. Omit for every session with a queue or an active run.'),
  }),
  mutates: false,
  surfaces: { mcp: 'svc_get_prompt_queue_status' },
  run: (ctx, input) => {
    const { app } = ctx;
    const ids = input.session_id
      ? [app.sessions.require(input.session_id).id]
      : [
          ...new Set([
            ...app.runs.list({ status: ['queued', 'running'], limit: 500 }).map((r) => r.session_id),
            ...app.agent.active().map((a) => a.session_id),
          ]),
        ];
    const sessions = ids.map((id) => app.agent.queue(id));
    return { sessions, total_queued: sessions.reduce((n, s) => n + s.length, 0) };
  },
});

export const queueEnqueue = defineTool({
  name: 'queue_enqueue',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Queue a prompt for a session (the same queue as TUI ctrl+enter and /enqueue). It runs after the active run and the prompts queued before it; when the session is idle it starts at once unless start is false.',
  input: z.strictObject({
    session_id: sessionIdField,
    prompt: z.string().min(1).describe('The prompt to queue.'),
    agent: z.string().min(1).optional().describe('Agent kind for its run.'),
    start: z
      .boolean()
      .default(true)
      .describe(
        'When the session is idle: start it at once (default), or false to leave it queued until the next send.',
      ),
  }),
  mutates: false,
  surfaces: {
    mcp: 'svc_queue_enqueue',
    http: { ...route(SESSION_ROUTES.enqueue), params: { id: 'session_id' }, status: 202 },
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    const sent = app.agent.enqueue({
      sessionId: session.id,
      prompt: input.prompt,
      agent: input.agent,
      origin: ctx.surface,
      start: input.start,
    });
    return { ...sent, queue: app.agent.queue(session.id) };
  },
});

export const getSessionPostureStatus = defineTool({
  name: 'get_session_posture_status',
  family: 'sessions',
  tag: 'primitive',
  description:
    'How a session is set up to run: mode, agent, model (and where it comes from), reasoning effort, workflow phase, state and queue, permission posture (allowed tools, grants, pending requests, attached surfaces), context use and tool counts.',
  input: z.strictObject({ session_id: sessionIdField }),
  mutates: false,
  surfaces: { mcp: 'svc_get_session_posture_status' },
  examples: [{ session_id: 'ses_0001' }],
  run: (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    const config = app.config;
    const kind = app.agent.kinds().find((k) => k.id === session.agent);
    const [model, modelSource] = session.model
      ? [session.model, 'session']
      : kind?.model
        ? [kind.model, `agents.${kind.id}.model`]
        : config.models.large
          ? [config.models.large, 'config models.large']
          : [null, 'none configured'];
    const state = app.agent.state(session.id);
    const entries = app.funnel(app.funnelContext(session.id));
    const lastAssistant = app.sessions
      .messages(session.id, { limit: 20 })
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
        grants: app.permissions.grants(session.id).map((g) => ({ tool: g.tool, scope: g.scope })),
        pending: app.permissions.pending(session.id).length,
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
  input: z.strictObject({
    session_id: sessionIdField,
    model: z.string().min(1).nullable().describe('Model selector <provider>/<model>, or null to clear.'),
  }),
  mutates: false,
  surfaces: { mcp: 'svc_set_session_model' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    const resolved = input.model ? await app.models.resolve({ selector: input.model }) : undefined;
    const updated = app.sessions.update(session.id, { model: resolved?.selector ?? null });
    return { session_id: session.id, model: updated.model, previous: session.model };
  },
});

export const setReasoningEffort = defineTool({
  name: 'set_reasoning_effort',
  family: 'sessions',
  tag: 'primitive',
  description:
    "Set how hard the model reasons in a session (minimal, low, medium, high), or none for the provider default. Mapped to each provider's own option.",
  input: z.strictObject({
    session_id: sessionIdField,
    effort: z
      .enum(['none', 'minimal', 'low', 'medium', 'high'])
      .describe('Reasoning effort; none clears it.'),
  }),
  mutates: false,
  surfaces: { mcp: 'svc_set_reasoning_effort' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: (ctx, input) => {
    const { app } = ctx;
    const session = resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }).session;
    const effort = input.effort === 'none' ? null : input.effort;
    app.sessions.update(session.id, { reasoning_effort: effort });
    return { session_id: session.id, reasoning_effort: effort, previous: session.reasoning_effort };
  },
});

export const sessionTools = [
  createSession,
  switchSession,
  listSessions,
  getSession,
  updateSession,
  deleteSession,
  message,
  sessionSearch,
  getPromptQueueStatus,
  queueEnqueue,
  getSessionPostureStatus,
  setSessionModel,
  setReasoningEffort,
];
