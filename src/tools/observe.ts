/**
 * Observability and context read tools (status family): session_observability, run_cue_ledger,
 * get_journal, get_journal_posture, get_composition_graph, get_task_aggregate,
 * get_prompt_stack_status, list_recent_prompt_stack_builds, describe_context, workspace_snapshot,
 * get_repo_preflight_status. Each is computed from real state (src/observe/); fields are
 * documented in docs/readouts.md.
 * @module
 */
import { z } from 'zod';
import {
  buildCompositionGraph,
  DEFAULT_GRAPH_MAX_NODES,
  MAX_GRAPH_MAX_NODES,
  renderCompositionGraph,
} from '../observe/composition-graph';
import { buildRunCueLedger, DEFAULT_CUE_RUNS_LIMIT, MAX_CUE_RUNS_LIMIT } from '../observe/cue-ledger';
import { buildDescribeContext } from '../observe/describe-context';
import {
  buildJournal,
  DEFAULT_JOURNAL_LIMIT,
  journalPosture,
  MAX_JOURNAL_LIMIT,
  renderJournalNarrative,
} from '../observe/journal';
import { promptStackStatus, recentPromptStackBuilds } from '../observe/prompt-stack-readout';
import { buildRepoPreflight } from '../observe/repo-preflight';
import {
  buildSessionObservability,
  DEFAULT_RECENT_RUNS_LIMIT,
  MAX_RECENT_RUNS_LIMIT,
} from '../observe/session-observability';
import { buildTaskAggregate } from '../observe/task-aggregate';
import { buildWorkspaceSnapshot } from '../observe/workspace-snapshot';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';

const sessionIdField = () =>
  sessionIdInput(
    'most-recent',
    'Session id (ses_…). Omit for the session you run in (agent), else the current session, else the most recent one.',
  );
const buildSessionField = () =>
  sessionIdInput('none', 'Only the builds of this session. Omit for every build.');

const limitField = (name: string, max: number, fallback: number, what: string) =>
  z
    .number({ error: `${name}: an integer from 1 to ${max}` })
    .int({ error: `${name}: an integer from 1 to ${max}` })
    .min(1, { error: `${name}: an integer from 1 to ${max}` })
    .max(max, { error: `${name}: at most ${max}` })
    .default(fallback)
    .describe(`${what} (default ${fallback}, at most ${max}).`);

/** Sample inputs for the parity walker: the seeded session and an unknown one. */
const SESSION_EXAMPLES = [{ session_id: 'ses_0001' }, { session_id: 'ses_unknown' }];

export const sessionObservability = defineTool({
  name: 'session_observability',
  family: 'status',
  tag: 'primitive',
  description:
    "One session's operational picture: state and queue, runs by status and origin with the most recent ones, tokens and cost, tool calls per tool with error rates and durations, step latency percentiles, compactions, the last context usage ratio, permission asks and denials, file changes and sub-agent work. Metadata only.",
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      recent_runs_limit: z
        .number({ error: 'an integer from 0 to 100' })
        .int({ error: 'an integer from 0 to 100' })
        .min(0, { error: 'an integer from 0 to 100' })
        .max(MAX_RECENT_RUNS_LIMIT, { error: `at most ${MAX_RECENT_RUNS_LIMIT}` })
        .default(DEFAULT_RECENT_RUNS_LIMIT)
        .describe(
          `Most recent runs listed in runs.recent (default ${DEFAULT_RECENT_RUNS_LIMIT}, at most ${MAX_RECENT_RUNS_LIMIT}); echoed in filters_applied.`,
        ),
    }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/sessions/:id/observability', params: { id: 'session_id' } },
    mcp: 'svc_session_observability',
  },
  examples: [...SESSION_EXAMPLES, { session_id: 'ses_0001', recent_runs_limit: 1 }],
  run: async (ctx, input) => await buildSessionObservability(ctx.app, input, ctx.sessionId),
});

export const runCueLedger = defineTool({
  name: 'run_cue_ledger',
  family: 'status',
  tag: 'primitive',
  description:
    'For each run of a session family: the cue that started it (user prompt, queue, schedule, sub-agent, fork, compat, autopilot) and the cues during it (cancel requests, permission asks and decisions, loop stops, compactions, provider recovery, errors), from the run ledger. No prompt text.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      limit: limitField(
        'limit',
        MAX_CUE_RUNS_LIMIT,
        DEFAULT_CUE_RUNS_LIMIT,
        'Most recent runs of the family listed',
      ),
    }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/sessions/:id/run-cue-ledger', params: { id: 'session_id' } },
    mcp: 'svc_run_cue_ledger',
  },
  examples: SESSION_EXAMPLES,
  run: async (ctx, input) => await buildRunCueLedger(ctx.app, input, ctx.sessionId),
});

export const getJournal = defineTool({
  name: 'get_journal',
  family: 'status',
  tag: 'primitive',
  description:
    'A chronological journal of a session: runs, prompts and answers (short redacted previews), tool calls by title, file changes with paths, plans and phase changes, checkpoints, compactions and decisions (permission answers, loop stops, cancels). No tool inputs or outputs.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      limit: limitField('limit', MAX_JOURNAL_LIMIT, DEFAULT_JOURNAL_LIMIT, 'Most recent entries returned'),
    }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/sessions/:id/journal', params: { id: 'session_id' } },
    mcp: 'svc_get_journal',
    cli: {
      command: 'config show-journal-narrative',
      description: 'Show the session journal as a narrative (--json: the journal payload).',
      text: renderJournalNarrative,
    },
  },
  examples: SESSION_EXAMPLES,
  run: async (ctx, input) => await buildJournal(ctx.app, input, ctx.sessionId),
});

export const getJournalPosture = defineTool({
  name: 'get_journal_posture',
  family: 'status',
  tag: 'primitive',
  description:
    'Whether the session journal can be built and what it holds: sources, journal events by type across sessions, sessions with entries, time span, retention and redaction; with session_id, that session’s entry counts by kind.',
  input: () =>
    z.strictObject({
      session_id: sessionIdInput(
        'none',
        'Also count the journal entries of this session. Omit for the store-wide posture only.',
      ),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_journal_posture' },
  examples: [{}, { session_id: 'ses_0001' }],
  run: async (ctx, input) => await journalPosture(ctx.app, input),
});

export const getCompositionGraph = defineTool({
  name: 'get_composition_graph',
  family: 'status',
  tag: 'primitive',
  description:
    'The composition graph of a session family: nodes (sessions, runs, sub-agent runs, tools, files, MCP servers) and edges (parent to child session, session to run, run to sub-agent run, run to tool with call and error counts, tool to file changed, tool to MCP server), bounded by max_nodes.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      max_nodes: limitField('max_nodes', MAX_GRAPH_MAX_NODES, DEFAULT_GRAPH_MAX_NODES, 'Most nodes returned'),
    }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/sessions/:id/composition-graph', params: { id: 'session_id' } },
    mcp: 'svc_get_composition_graph',
    cli: {
      command: 'config show-composition-graph',
      description: 'Show the composition graph of a session family (--json: nodes and edges).',
      text: renderCompositionGraph,
    },
  },
  examples: SESSION_EXAMPLES,
  run: async (ctx, input) => await buildCompositionGraph(ctx.app, input, ctx.sessionId),
});

export const getTaskAggregate = defineTool({
  name: 'get_task_aggregate',
  family: 'status',
  tag: 'primitive',
  description:
    "Aggregate of a session family's tasks and outcomes: the todo lists of the session and its sub-agent sessions (counts, in-progress and pending tasks), runs by status, agent and start cue, outcomes (success rate, end reasons, the last outcome), tokens, cost and the plan state.",
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_get_task_aggregate' },
  examples: SESSION_EXAMPLES,
  run: async (ctx, input) => await buildTaskAggregate(ctx.app, input, ctx.sessionId),
});

export const getPromptStackStatus = defineTool({
  name: 'get_prompt_stack_status',
  family: 'status',
  tag: 'primitive',
  description:
    'How the system prompt is assembled: recording posture, build counts, the last build with its sections (name, source, size, token estimate, sha256 prefix), average and largest sizes, per-section statistics and stability between consecutive builds of a session. Never the prompt text.',
  input: () =>
    z.strictObject({
      session_id: buildSessionField(),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_prompt_stack_status' },
  examples: [{}, { session_id: 'ses_0001' }],
  run: async (ctx, input) => await promptStackStatus(ctx.app, input),
});

export const listRecentPromptStackBuilds = defineTool({
  name: 'list_recent_prompt_stack_builds',
  family: 'status',
  tag: 'primitive',
  description:
    'The most recent system-prompt assemblies, newest first: session, run, agent, total size, token estimate, sha256 prefix and each section (name, source, size, token estimate, sha256 prefix). Never the prompt text.',
  input: () =>
    z.strictObject({
      session_id: buildSessionField(),
      limit: limitField('limit', 200, 20, 'Most builds returned'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_list_recent_prompt_stack_builds' },
  examples: [{}, { session_id: 'ses_0001', limit: 5 }],
  run: async (ctx, input) => await recentPromptStackBuilds(ctx.app, input),
});

export const describeContext = defineTool({
  name: 'describe_context',
  family: 'status',
  tag: 'primitive',
  description:
    'What the agent sees as context: the context files found (AGENTS.md, CLAUDE.md, svc.md…), the environment block, the last prompt assembly, and a cached codebase summary (languages, top-level layout, manifests, test/lint/build commands). refresh_codebase_context recomputes the summary, at most once per options.codebase_context.min_refresh_interval_seconds.',
  input: () =>
    z.strictObject({
      refresh_codebase_context: z
        .boolean()
        .default(false)
        .describe(
          'Recompute the codebase summary now. Inside the minimum refresh interval it is not rerun and the answer says when the next refresh is allowed. Omit to use the cached summary.',
        ),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_describe_context' },
  // A refresh changes the cache between surfaces; the walker compares cached reads only.
  examples: [{}, { refresh_codebase_context: false }],
  run: async (ctx, input) =>
    buildDescribeContext(ctx.app, input, { sessionId: ctx.sessionId, signal: ctx.signal }),
});

export const workspaceSnapshot = defineTool({
  name: 'workspace_snapshot',
  family: 'status',
  tag: 'primitive',
  description:
    'A snapshot of the workspace: git branch, HEAD, upstream with ahead/behind, dirty state with staged, unstaged, untracked and conflicted counts, file and directory counts and languages (gitignored files skipped); with options.workspace_environment_fields set, environment fields too (env var names only, never values).',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_workspace_snapshot' },
  run: async (ctx) => buildWorkspaceSnapshot(ctx.app, ctx.signal),
});

export const getRepoPreflightStatus = defineTool({
  name: 'get_repo_preflight_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Pre-run checks of the repository, each pass, warn or fail: is a git repository, clean or dirty working tree, branch, ahead/behind upstream, merge or rebase in progress, untracked count, very large files, and whether svc’s data directory is ignored by git.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_get_repo_preflight_status' },
  run: async (ctx) => buildRepoPreflight(ctx.app, ctx.signal),
});

export const observeTools = [
  sessionObservability,
  runCueLedger,
  getJournal,
  getJournalPosture,
  getCompositionGraph,
  getTaskAggregate,
  getPromptStackStatus,
  listRecentPromptStackBuilds,
  describeContext,
  workspaceSnapshot,
  getRepoPreflightStatus,
];
