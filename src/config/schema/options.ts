/**
 * `[options]`: svc's own switches and tuning, one key per feature. The larger sections are in the
 * sibling `options-*.ts` files; the key order here is the order the docs list them in.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { adaptiveOrchestrationOptions, healthFollowonsOptions } from './options-adaptive';
import { localProbeOptions, tpmRecoveryOptions } from './options-providers';
import { alertsOptions, lengthRecoveryOptions, openaiCompatOptions } from './options-runs';
import {
  codebaseContextOptions,
  lspOptions,
  workflowsOptions,
  workspaceEnvironmentFieldsOptions,
} from './options-workspace';
import { sandboxSchema, shellEnvSchema } from './sandbox';
import { toolList } from './shared';

const presetSchema = lazy(() =>
  z.strictObject({
    pack: z
      .string()
      .min(1)
      .describe('Pack the preset activates: a pack name (.svc/packs/<name>) or a path to a pack.toml.'),
    description: z.string().optional().describe('Shown by session_list_packs.'),
    overrides: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "Pack manifest keys that replace the pack's own values (description, prompt, skills, hooks, policy, task_rules, skill_rules, choreography). Validated at activation; errors become diagnostics.",
      ),
  }),
);

export const optionsSchema = lazy(() =>
  z.strictObject({
    data_directory: z.string().optional(),
    disabled_tools: toolList().default([]),
    disable_provider_auto_update: z.boolean().default(false),
    catalog_url: z.string().optional().describe('Where svc update-providers fetches from by default.'),
    credential_store: z
      .enum(['file', 'keyring'])
      .default('file')
      .describe(
        'Durable credential store behind keychain:<provider>: a 0600 file under the user config dir, or the OS keyring (falls back to the file when unavailable).',
      ),
    local_probe: localProbeOptions(),
    tpm_recovery: tpmRecoveryOptions(),
    operating_packs: z
      .boolean()
      .default(false)
      .describe(
        'Gates operating packs: the pack tools, the /v1/session-operating-mode routes and pack application.',
      ),
    operating_mode_presets: z
      .record(z.string(), presetSchema())
      .default({})
      .describe('Preset id → pack plus overrides, usable wherever a pack name or path is.'),
    adaptive_orchestration: adaptiveOrchestrationOptions(),
    health_followons: healthFollowonsOptions(),
    sandbox: sandboxSchema(),
    shell_env: shellEnvSchema(),
    length_recovery: lengthRecoveryOptions(),
    alerts: alertsOptions(),
    openai_compat: openaiCompatOptions(),
    lsp: lspOptions(),
    edit_capsules: z
      .boolean()
      .default(false)
      .describe(
        "Group each agent run's file changes into an edit capsule at run end (checkpoint before the run's first change; revertible with revert_edit_capsule).",
      ),
    workspace_environment_fields: workspaceEnvironmentFieldsOptions(),
    codebase_context: codebaseContextOptions(),
    workspace_observer: z.strictObject({ enabled: z.boolean().default(false) }).prefault({}),
    stigmergy: z
      .strictObject({
        read_tools: z.boolean().default(false).describe('Offer stigmergy read tools over MCP.'),
        corpus_dir: z.string().optional().describe('Override the multiplayer reference corpus location.'),
      })
      .prefault({}),
    cognition: z
      .strictObject({
        window_days: z.number().int().positive().default(14),
        window_max: z.number().int().positive().default(200),
      })
      .prefault({}),
    context_files: z.array(z.string()).default(['AGENTS.md', 'CLAUDE.md', 'svc.md']),
    max_steps: z.number().int().positive().default(50),
    tool_exposure: z
      .enum(['auto', 'all', 'deferred'])
      .default('auto')
      .describe(
        'Which effective tools a model request carries with their full schemas: all; deferred (core coding and MCP tools in full, the others listed by name in the system prompt and sent in full once called); auto (deferred when the schemas would take over a tenth of the context window).',
      ),
    auto_compact: z.boolean().default(true),
    compaction_threshold: z.number().min(0.1).max(1).default(0.85),
    loop_detection: z.strictObject({ max_repeats: z.number().int().min(2).default(4) }).prefault({}),
    bash: z
      .strictObject({
        timeout_seconds: z.number().int().positive().default(120),
        max_output_bytes: z.number().int().positive().default(30_000),
      })
      .prefault({}),
    search: z
      .strictObject({
        memory_limit_mb: memoryLimitMb(
          'The most memory ripgrep (ls, glob, grep, search, the file walker) may take, in MiB, on Linux; 0: no limit. A search past it ends with an error naming the likely cause (an oversized ignore file).',
        ),
      })
      .prefault({}),
    git: z
      .strictObject({
        memory_limit_mb: memoryLimitMb(
          "The most memory a heavy git command svc runs for the workspace (diff, log, show, reset, gc…; not a checkpoint's own) may take, in MiB, on Linux; 0: no limit. Such a git also dies with svc.",
        ),
      })
      .prefault({}),
    workflows: workflowsOptions(),
  }),
);

/** A child's memory limit in MiB (`prlimit --data`, src/workspace/child-limits.ts): 2048 unless set; 0: none. */
function memoryLimitMb(description: string) {
  return z.number().int().min(0).default(2048).describe(description);
}
