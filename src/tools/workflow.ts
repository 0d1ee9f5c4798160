/**
 * Workflow tools. Tagged workflow (spec TOOLS-50; sub-agents never get them): `spawn_agents_on_csv`,
 * `agentic_fetch`, `create_team`, `execute_dag`, `orchestrate_workflow`. Primitive: `workflow_template`
 * (saved definitions for orchestrate_workflow), `get_teams_status`, and the planning tools
 * `analyze_ripple_impact` and `spawn_worktree_override`. Every sub-agent they start is a child run
 * of the caller's run (or of their pipeline run), with no more tools than the caller has. The team
 * tools are in teams.ts, the shared input fields in workflow-fields.ts.
 * @module
 */
import { z } from 'zod';
import { recipeParameterSchema } from '../recipes/recipe-schema';
import { agenticFetch } from '../workflows/agentic-fetch';
import { spawnAgentsOnCsv } from '../workflows/csv-runner';
import { dagTaskSchema, executeDag } from '../workflows/dag-runner';
import { orchestrateWorkflow } from '../workflows/orchestrator';
import { analyzeRipple } from '../workflows/ripple';
import { manageTemplate } from '../workflows/template-manager';
import { workflowSteps } from '../workflows/workflow-definition';
import { spawnWorktreeOverride } from '../workflows/worktree';
import { scopedCaller } from './agent-caller';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';
import { createTeam, getTeamsStatus } from './teams';
import { agentField, maxParallel, maxTurns, sessionIdField, toolsField } from './workflow-fields';

export const spawnAgentsOnCsvInput = () =>
  z.strictObject({
    csv_path: z
      .string()
      .min(1)
      .optional()
      .describe('CSV file with a header row, relative to the workspace. Give csv_path or csv.'),
    csv: z
      .string()
      .min(1)
      .optional()
      .describe('The CSV text itself (header row first). Give csv_path or csv.'),
    prompt: z
      .string()
      .min(1)
      .describe(
        'Prompt template for each row: {{ column }} inserts that column ({{ first_name }} for a header "First name"), {{ row_number }} the row number.',
      ),
    agent: agentField(),
    tools: toolsField(),
    max_parallel: maxParallel(),
    max_rows: z
      .number()
      .int()
      .min(1)
      .max(500)
      .default(100)
      .describe('Refuse files with more rows (default 100).'),
    max_turns: maxTurns(),
    output_path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Where to write the results (workspace-relative, .csv or .json). Default <input>.results.csv next to the input.',
      ),
    format: z
      .enum(['csv', 'json'])
      .optional()
      .describe('Results format; default from the output_path extension, else csv.'),
    overwrite: z.boolean().default(false).describe('Replace an existing results file. Default false.'),
    session_id: sessionIdField(),
  });

export const spawnAgentsOnCsvTool = defineTool({
  name: 'spawn_agents_on_csv',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Start one sub-agent per CSV row with a templated prompt, a bounded number at once, and collect every answer (with run_id and session_id) into a CSV or JSON file in the workspace. Returns csv_run_id, run_id, session_id, output_path and the per-row results.',
  input: spawnAgentsOnCsvInput,
  // Writes the results file (the loop asks once, centrally, before it starts).
  mutates: true,
  parity: false,
  surfaces: { mcp: 'svc_spawn_agents_on_csv' },
  run: async (ctx, input) =>
    spawnAgentsOnCsv(
      ctx.app,
      ctx.app.workflows,
      await scopedCaller(ctx, input.session_id),
      input,
      opContext(ctx, 'spawn_agents_on_csv').approve,
    ),
  toModelOutput: (r) =>
    `${r.completed} of ${r.rows} rows completed (run ${r.run_id}); results written to ${r.output_path}.${r.error ? ` ${r.error}.` : ''}${r.warnings.length ? ` Warnings: ${r.warnings.join('; ')}` : ''}`,
});

export const agenticFetchInput = () =>
  z.strictObject({
    url: z.string().min(1).describe('Absolute http:// or https:// URL to read.'),
    prompt: z.string().min(1).describe('The question to answer from the page, or what to extract from it.'),
    format: z
      .enum(['markdown', 'text', 'html'])
      .default('markdown')
      .describe('How the page is given to the sub-agent (default markdown).'),
    agent: agentField(),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .max(120)
      .optional()
      .describe('Give up fetching after this many seconds (default 30).'),
    max_turns: maxTurns(),
    session_id: sessionIdField(),
  });

export const agenticFetchTool = defineTool({
  name: 'agentic_fetch',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Fetch a web page and have a sub-agent read it and answer a question about it (it may follow a link with fetch). Use it instead of fetch when the page is long and you need one answer from it. Returns the answer with the run_id and session_id of the sub-agent.',
  input: agenticFetchInput,
  mutates: false,
  parity: false,
  surfaces: { mcp: 'svc_agentic_fetch' },
  run: async (ctx, input) =>
    agenticFetch(
      ctx.app,
      await scopedCaller(ctx, input.session_id),
      {
        url: input.url,
        question: input.prompt,
        format: input.format,
        agent: input.agent,
        timeout_seconds: input.timeout_seconds,
        max_turns: input.max_turns,
      },
      opContext(ctx, 'fetch'),
    ),
  toModelOutput: (r) =>
    r.run_status === 'completed'
      ? r.answer || '(the sub-agent found no answer)'
      : `The sub-agent run ${r.run_id} ended ${r.run_status}: ${r.error}`,
});

export const executeDagInput = () =>
  z.strictObject({
    tasks: z
      .array(dagTaskSchema())
      .min(1)
      .max(50)
      .describe('The tasks; depends_on makes the graph. Tasks without dependencies start at once.'),
    max_parallel: maxParallel(),
    title: z.string().max(80).optional().describe('A few words naming the DAG (its session title).'),
    session_id: sessionIdField(),
  });

export const executeDagTool = defineTool({
  name: 'execute_dag',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Run a DAG of sub-agent tasks: each task starts when the tasks it depends_on have completed, independent tasks run in parallel. A cycle or unknown dependency is refused before anything runs; a task whose dependency failed is skipped. Returns dag_run_id, run_id, session_id and each task with its status, run_id and output.',
  input: executeDagInput,
  mutates: true,
  parity: false,
  surfaces: { mcp: 'svc_execute_dag' },
  run: async (ctx, input) =>
    executeDag(ctx.app, ctx.app.workflows, await scopedCaller(ctx, input.session_id), input),
  toModelOutput: (r) =>
    [
      `DAG ${r.status} (dag_run_id ${r.dag_run_id}, run ${r.run_id}).`,
      ...r.tasks.map(
        (t) =>
          `\n## ${t.id}: ${t.status}${t.error && t.status !== 'completed' ? ` — ${t.error}` : ''}\n${t.output}`,
      ),
    ].join('\n'),
});

export const orchestrateWorkflowInput = () =>
  z.strictObject({
    name: z.string().min(1).describe('Saved workflow template (workflow_template action list).'),
    params: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .default({})
      .describe('Workflow parameters by name.'),
    max_parallel: maxParallel(),
    session_id: sessionIdField(),
  });

export const orchestrateWorkflowTool = defineTool({
  name: 'orchestrate_workflow',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Run a saved workflow template (workflow_template): its recipe and agent steps as a DAG, independent steps in parallel, each step a child run. Returns workflow_run_id, run_id, session_id and each step with its status, run_id and output.',
  input: orchestrateWorkflowInput,
  mutates: true,
  parity: false,
  surfaces: { mcp: 'svc_orchestrate_workflow' },
  run: async (ctx, input) =>
    orchestrateWorkflow(
      ctx.app,
      { workflows: ctx.app.workflows, recipes: ctx.app.recipes },
      await scopedCaller(ctx, input.session_id),
      {
        name: input.name,
        params: input.params,
        max_parallel: input.max_parallel,
        approve: opContext(ctx, 'bash').approve,
      },
    ),
  toModelOutput: (r) =>
    [
      `Workflow ${r.workflow} ${r.status} (workflow_run_id ${r.workflow_run_id}, run ${r.run_id}).`,
      ...r.steps.map(
        (s) =>
          `\n## ${s.id} (${s.kind}): ${s.status}${s.error && s.status !== 'completed' ? ` — ${s.error}` : ''}\n${s.output}`,
      ),
    ].join('\n'),
});

export const workflowTemplateInput = () =>
  z.strictObject({
    action: z.enum(['save', 'list', 'inspect', 'update', 'delete']).describe('What to do.'),
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, - or _')
      .optional()
      .describe('Template name (all actions but list).'),
    description: z.string().optional().describe('save/update: what the workflow does.'),
    parameters: recipeParameterSchema()
      .array()
      .optional()
      .describe(
        'save/update: parameters as in recipes (name, type, description, required, default, choices); steps use {{ name }}.',
      ),
    steps: workflowSteps()
      .optional()
      .describe(
        'save/update: the steps, each with recipe (+ params) or prompt (+ agent, tools), and depends_on.',
      ),
    max_parallel: maxParallel().describe('save/update: most steps running at once.'),
  });

export const workflowTemplate = defineTool({
  name: 'workflow_template',
  family: 'remote',
  tag: 'primitive',
  description:
    'Saved workflow templates for orchestrate_workflow. save (name + steps, a DAG of recipe or agent steps, optional parameters), list, inspect (definition, revision, recent runs), update (replace fields, revision + 1), delete. Definitions are checked on save: cycles, unknown steps, recipes, agent kinds, tools, template references.',
  input: workflowTemplateInput,
  mutates: false,
  examples: [{ action: 'list' }],
  surfaces: {
    mcp: 'svc_workflow_template',
    cli: [
      { command: 'workflow list', description: 'List saved workflow templates.', fixed: { action: 'list' } },
      {
        command: 'workflow inspect',
        description: 'Show one saved workflow template: its steps and parameters.',
        args: ['name'],
        fixed: { action: 'inspect' },
      },
      {
        command: 'workflow delete',
        description: 'Delete a saved workflow template.',
        args: ['name'],
        fixed: { action: 'delete' },
      },
    ],
  },
  run: async (ctx, input) => manageTemplate(ctx.app, input, (request) => ctx.ask(request)),
});

export const analyzeRippleImpactInput = () =>
  z.strictObject({
    files: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Changed files, relative to the workspace. Omit both files and symbols to use the working tree changes (git).',
      ),
    symbols: z
      .array(z.string().min(1))
      .optional()
      .describe('Changed symbols: a name, a name_path (Class.method) or a symbol_key from search.'),
    depth: z.number().int().min(1).max(3).default(2).describe('How many import hops to follow (default 2).'),
    max_results: z
      .number()
      .int()
      .min(1)
      .max(500)
      .default(100)
      .describe('Most dependent files to report (default 100).'),
  });

export const analyzeRippleImpact = defineTool({
  name: 'analyze_ripple_impact',
  family: 'planning',
  tag: 'primitive',
  description:
    'What a change reaches: files importing the changed files (transitively), references of changed symbols, the tests that cover them, suggested test commands, and risk notes (fan-in, untested files, schemas, entry points). Use before editing shared code and to pick the tests to run.',
  input: analyzeRippleImpactInput,
  mutates: false,
  examples: [{ files: ['README.md'] }],
  surfaces: {
    mcp: 'svc_analyze_ripple_impact',
    cli: { command: 'ripple' },
  },
  run: async (ctx, input) => analyzeRipple(ctx.app, input, ctx.signal),
});

export const spawnWorktreeOverrideInput = () =>
  z.strictObject({
    prompt: z
      .string()
      .min(1)
      .describe('The complete task for the sub-agent; it works in its own git worktree.'),
    description: z
      .string()
      .max(120)
      .optional()
      .describe('A few words naming the task (session title, commit message).'),
    agent: agentField(),
    tools: toolsField(),
    base: z
      .string()
      .min(1)
      .default('HEAD')
      .describe('Commit the worktree starts from (default HEAD; uncommitted changes are not included).'),
    keep_worktree: z
      .boolean()
      .default(false)
      .describe('Keep the worktree directory afterwards (default: remove it; the branch keeps the changes).'),
    max_turns: maxTurns(),
    session_id: sessionIdField(),
  });

export const spawnWorktreeOverrideTool = defineTool({
  name: 'spawn_worktree_override',
  family: 'planning',
  tag: 'primitive',
  description:
    "Run a sub-agent in a separate git worktree of the workspace (under the data dir) so its edits never touch the user's checkout. Its changes are committed on a branch svc/worktree/<id>; returns override_id, run_id, session_id, the branch, changed files, diff stat and diff/merge instructions. The worktree is removed afterwards unless keep_worktree.",
  input: spawnWorktreeOverrideInput,
  // Creates a branch and a worktree: the loop asks once before it starts.
  mutates: true,
  parity: false,
  surfaces: { mcp: 'svc_spawn_worktree_override' },
  run: async (ctx, input) =>
    spawnWorktreeOverride(ctx.app, ctx.app.workflows, await scopedCaller(ctx, input.session_id), input),
  toModelOutput: (r) =>
    [
      `Worktree sub-agent ${r.status} (run ${r.run_id}).`,
      r.branch
        ? `Changes on branch ${r.branch} (${r.files_changed.length} file(s)):\n${r.diff_stat}\nDiff: ${r.instructions!.diff}\nMerge: ${r.instructions!.merge}`
        : 'It changed nothing.',
      ...(r.error ? [`Error: ${r.error}`] : []),
      ...(r.answer ? ['', r.answer] : []),
    ].join('\n'),
});

export const workflowTools = [
  spawnAgentsOnCsvTool,
  agenticFetchTool,
  createTeam,
  getTeamsStatus,
  executeDagTool,
  orchestrateWorkflowTool,
  workflowTemplate,
  analyzeRippleImpact,
  spawnWorktreeOverrideTool,
];
