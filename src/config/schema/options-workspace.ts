/**
 * `[options.lsp]`, `[options.workspace_environment_fields]`, `[options.codebase_context]` and `[options.workflows]`: diagnostics, the workspace's prompt sections, and the workflow runner.
 * Parts of ./options.ts's `optionsSchema`.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const lspOptions = lazy(() =>
  z
    .strictObject({
      auto: z
        .boolean()
        .default(true)
        .describe(
          'Start the built-in language server of each language the workspace uses (typescript, python, go, rust) when it is installed; [lsp.<id>] entries always apply.',
        ),
      diagnostics_after_edit: z
        .boolean()
        .default(true)
        .describe(
          "After edit, write and multiedit, append the touched files' new diagnostics to the tool result.",
        ),
      diagnostics_wait_seconds: z
        .number()
        .min(0.5)
        .max(120)
        .default(8)
        .describe('How long an edit waits for the language server (the first one also starts it).'),
      max_diagnostics: z
        .int()
        .min(1)
        .max(200)
        .default(20)
        .describe('At most this many diagnostics per edit result, errors first.'),
      idle_minutes: z
        .number()
        .min(0.01)
        .default(10)
        .describe('A language server nobody asked for this long is stopped (started again on the next use).'),
      tsserver_memory_mb: z
        .int()
        .min(256)
        .max(65_536)
        .default(3072)
        .describe(
          "The heap limit in MiB of the built-in TypeScript server's tsserver processes (typescript-language-server's maxTsServerMemory, Node's --max-old-space-size).",
        ),
    })
    .prefault({})
    .describe(
      "Language servers: automatic start, diagnostics after edits, idle stop, the TypeScript server's memory.",
    ),
);

export const workspaceEnvironmentFieldsOptions = lazy(() =>
  z
    .strictObject({
      platform: z.boolean().default(true).describe('Include the OS platform (linux, darwin, win32).'),
      arch: z.boolean().default(true).describe('Include the CPU architecture.'),
      node_version: z.boolean().default(true).describe('Include the Node.js version svc runs on.'),
      shell: z.boolean().default(true).describe('Include the login shell name (basename of SHELL).'),
      cpu_count: z.boolean().default(true).describe('Include the number of logical CPUs.'),
      total_memory_mb: z.boolean().default(false).describe('Include the total memory in MiB.'),
      env_vars: z
        .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'))
        .default([])
        .describe('Environment variable names reported as set or unset; their values are never shown.'),
    })
    .optional()
    .describe(
      'Set (even as an empty table) to add environment fields to workspace_snapshot; each field can be turned off. Unset: no environment fields.',
    ),
);

export const codebaseContextOptions = lazy(() =>
  z
    .strictObject({
      min_refresh_interval_seconds: z
        .number()
        .int()
        .min(0)
        .default(60)
        .describe('describe_context recomputes the codebase summary at most once per this many seconds.'),
    })
    .prefault({}),
);

export const workflowsOptions = lazy(() =>
  z
    .strictObject({
      max_parallel: z
        .number()
        .int()
        .min(1)
        .max(16)
        .default(4)
        .describe('Most sub-agents a workflow (DAG, CSV fan-out, team, template) runs at once.'),
      max_depth: z
        .number()
        .int()
        .min(1)
        .max(20)
        .default(6)
        .describe('Deepest session nesting a workflow or recipe may start from (stops runaway recursion).'),
    })
    .prefault({})
    .describe('Recipes, DAGs, teams and workflow templates.'),
);
