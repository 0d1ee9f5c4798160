/**
 * Sessions family: create, switch, list, get, update, delete sessions; the `message` tool (send,
 * list, inspect, update, delete); search; the prompt queue (`queue_enqueue`,
 * `get_prompt_queue_status`: the same queue as TUI ctrl+enter and `/enqueue`); the session's
 * posture; its model and reasoning effort. Thin: the work is in `app.agent` and `app.sessions`.
 * The session rows are here; the `message` tool, the queue and the settings have their own files
 * (messages.ts, prompt-queue.ts, session-settings.ts), and `sessionTools` lists the whole family.
 * @module
 */
import { z } from 'zod';
import { agentKind } from '../agent/agent-kinds';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { sessionSummary, sessionView } from '../sessions/session-views';
import {
  agentChildSession,
  agentKindWithin,
  agentLoosening,
  agentNoSwitch,
  agentScope,
} from './agent-caller';
import { defineTool } from './core/define-tool';
import { message } from './messages';
import { getPromptQueueStatus, queueEnqueue } from './prompt-queue';
import { busyGuard } from './session-guards';
import { route, SESSION_ROUTES } from './session-routes';
import { getSessionPostureStatus, setReasoningEffort, setSessionModel } from './session-settings';

const sessionIdField = () => sessionIdInput('current');

export const createSession = defineTool({
  name: 'create_session',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Create a session (a child of another with parent_id). Optionally make it the current session.',
  input: () =>
    z.strictObject({
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
  run: async (ctx, input) => {
    const { app } = ctx;
    if (input.agent) agentKind(app.config, input.agent, 'primary');
    // As update_session checks it: a session made with a model no provider serves failed only at
    // its first run.
    if (input.model) await app.models.resolve({ selector: input.model });
    if (input.switch) agentNoSwitch(ctx);
    const held = await agentChildSession(ctx, input);
    const session = await app.agent.createSession({
      title: held.title,
      parent_id: held.parent_id,
      agent: held.agent,
      model: held.model,
      mode: held.mode,
    });
    if (input.switch) await app.agent.setCurrentSession(session.id);
    return { session: await sessionView(app, session), current: input.switch };
  },
});

export const switchSession = defineTool({
  name: 'switch_session',
  family: 'sessions',
  tag: 'primitive',
  description: 'Make a session the current one (the default of session tools and of svc run --continue).',
  input: () => z.strictObject({ session_id: sessionIdInput('required', 'The session to switch to.') }),
  mutates: false,
  surfaces: { mcp: 'svc_switch_session', cli: { command: 'session switch', args: ['session_id'] } },
  // An action, not a read: nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    agentNoSwitch(ctx);
    const previous = await app.agent.currentSession();
    const session = await app.sessions.require(input.session_id);
    await app.agent.setCurrentSession(session.id);
    return {
      session_id: session.id,
      previous_session_id: previous,
      session: await sessionView(app, session),
    };
  },
});

export const listSessions = defineTool({
  name: 'list_sessions',
  family: 'sessions',
  tag: 'primitive',
  description: 'Sessions, most recently updated first, with their state, queue length and usage.',
  input: () =>
    z.strictObject({
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
      text: (r: {
        sessions: Awaited<ReturnType<typeof sessionView>>[];
        current_session_id: string | null;
      }) =>
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
  run: async (ctx, input) => {
    const { app } = ctx;
    const parent = input.parent_id ?? (input.roots_only ? null : undefined);
    const sessions = await app.sessions.list({ limit: input.limit, offset: input.offset, parent_id: parent });
    return {
      sessions: await Promise.all(sessions.map((s) => sessionView(app, s))),
      count: sessions.length,
      total: await app.sessions.count(),
      current_session_id: await app.agent.currentSession(),
    };
  },
});

export const getSession = defineTool({
  name: 'get_session',
  family: 'sessions',
  tag: 'primitive',
  description: 'One session: its fields, state, queue, children, last run and pending permission requests.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_get_session', http: { ...route(SESSION_ROUTES.get), params: { id: 'session_id' } } },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    const last = (await app.runs.list({ session_id: session.id, limit: 1 }))[0];
    return {
      session: await sessionView(app, session),
      children: (await app.sessions.list({ parent_id: session.id, limit: 100 })).map(sessionSummary),
      last_run: last
        ? { id: last.id, status: last.status, agent: last.agent, steps: last.steps, reason: last.reason }
        : null,
      queue: (await app.agent.queue(session.id)).items,
      // Any node's (PostgreSQL: stored requests of runs other nodes hold).
      pending_permissions: (await app.permissions.listPending(session.id)).map((p) => ({
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
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
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
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    if (input.agent) agentKind(app.config, input.agent, 'primary');
    await agentScope(ctx, session.id, 'change');
    agentLoosening(ctx, session, input);
    if (input.agent && input.agent !== session.agent) await agentKindWithin(ctx, input.agent);
    if (input.model) await app.models.resolve({ selector: input.model });
    const { session_id: _ignored, ...patch } = input;
    if (Object.keys(patch).length === 0) {
      throw new SvcError(
        'invalid_input',
        'nothing to update: pass title, mode, agent, model or reasoning_effort',
      );
    }
    return {
      session: await sessionView(app, await app.sessions.update(session.id, patch)),
      changed: Object.keys(patch),
    };
  },
});

export const deleteSession = defineTool({
  name: 'delete_session',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Delete a session with its child sessions, messages and runs. Refused while a run of it is active.',
  input: () => z.strictObject({ session_id: sessionIdInput('required', 'The session to delete.') }),
  mutates: true,
  surfaces: {
    mcp: 'svc_delete_session',
    cli: { command: 'session delete', args: ['session_id'] },
    http: { ...route(SESSION_ROUTES.delete), params: { id: 'session_id' } },
  },
  run: async (ctx, input) => {
    const { app } = ctx;
    const family = await app.sessions.family(input.session_id);
    if (family.length === 0) await app.sessions.require(input.session_id);
    await agentScope(ctx, input.session_id, 'delete');
    if (ctx.sessionId && family.some((s) => s.id === ctx.sessionId)) {
      throw new SvcError(
        'conflict',
        `session_id: ${input.session_id} is (or contains) the session this run works in`,
      );
    }
    for (const member of family) await busyGuard(app, member.id, 'delete it');
    const current = await app.agent.currentSession();
    const deleted = await app.sessions.delete(input.session_id);
    if (current && deleted.includes(current)) await app.agent.setCurrentSession(null);
    return { deleted, count: deleted.length };
  },
});

export const sessionSearch = defineTool({
  name: 'session_search',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Find sessions by full-text search over message text and tool output (every word, as a prefix, case- and accent-insensitive), best match first (bm25) with a snippet of the best message; sessions whose title contains the text follow, newest first. Filter by session, role, tool and date.',
  input: () =>
    z.strictObject({
      query: z.string().min(1).describe('Text to look for.'),
      limit: z.number().int().min(1).max(200).default(20).describe('Most sessions to return.'),
      session_id: z.string().min(1).optional().describe('Only this session.'),
      role: z
        .enum(['user', 'assistant', 'system', 'tool'])
        .optional()
        .describe('Only messages of this role (leaves out title-only matches).'),
      tool: z
        .string()
        .min(1)
        .optional()
        .describe('Only messages that call this tool or carry its output (leaves out title-only matches).'),
      since: z
        .string()
        .min(1)
        .optional()
        .describe(
          'Only messages from this time on: ISO 8601 (2026-11-01 or 2026-11-01T09:00:00Z) or epoch ms.',
        ),
      until: z.string().min(1).optional().describe('Only messages up to this time: ISO 8601 or epoch ms.'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_session_search',
    cli: { command: 'session search', args: ['query'] },
    http: { method: 'GET', path: '/v1/session-search' },
  },
  examples: [{ query: 'test' }, { query: 'failing test', role: 'tool', tool: 'bash' }],
  run: async (ctx, input) => {
    const results = await ctx.app.sessions.search(input.query, {
      limit: input.limit,
      session_id: input.session_id,
      role: input.role,
      tool: input.tool,
      since: input.since === undefined ? undefined : timeOf('since', input.since),
      until: input.until === undefined ? undefined : timeOf('until', input.until),
    });
    return {
      query: input.query,
      results: results.map((r) => ({
        session_id: r.session.id,
        title: r.session.title,
        updated_at: r.session.updated_at,
        snippet: r.snippet,
        highlight: r.highlight,
        message_id: r.message_id,
        role: r.role,
        matched_at: r.matched_at,
        score: r.score,
      })),
      count: results.length,
    };
  },
});

/** A time filter: epoch ms digits or an ISO 8601 date or time. */
function timeOf(field: string, value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new SvcError(
      'invalid_input',
      `${field}: "${value}" is not a time; use ISO 8601 (2026-11-01) or epoch ms`,
    );
  }
  return ms;
}

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
