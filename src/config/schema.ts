/**
 * The one config schema: every key the spec's config table names, plus what svc adds.
 * Own inputs are strict objects so an unknown key is found by name (and reported as a warning).
 * @module
 */
import { z } from 'zod';
import { sandboxSchema, shellEnvSchema } from './sandbox-schema';

const toolList = z.array(z.string().min(1));
const selector = z.string().min(1).describe('A model selector, <provider>/<model>.');

export const providerOptionsSchema = z.strictObject({
  auth_source: z
    .enum(['auto', 'env', 'profile', 'bearer', 'container'])
    .optional()
    .describe('Cloud credential source; auto when unset.'),
  region: z.string().optional().describe('Cloud region. Still required when auth_source is container.'),
  profile: z.string().optional().describe('Named cloud profile.'),
  project: z.string().optional().describe('Cloud project id (vertex).'),
  location: z.string().optional().describe('Cloud location (vertex).'),
  api_version: z.string().optional().describe('API version (azure).'),
  resource_name: z.string().optional().describe('Azure resource name.'),
  use_directory_identity: z.boolean().optional().describe('Azure: use directory (Entra) identity, no key.'),
  reasoning_effort: z.string().optional(),
});

export const providerModelSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string().optional(),
  context_window: z.number().int().positive().optional(),
  max_output: z.number().int().positive().optional(),
  cost_per_1m_in: z.number().nonnegative().optional(),
  cost_per_1m_out: z.number().nonnegative().optional(),
  tool_call: z.boolean().optional(),
  reasoning: z.boolean().optional(),
  attachments: z.boolean().optional(),
});

export const providerSchema = z.strictObject({
  type: z
    .string()
    .optional()
    .describe(
      'Wire type: openai, anthropic, google, openai-compat, anthropic-compat (anthropic-style), vendor-cli, acp, or a catalog provider id.',
    ),
  name: z.string().optional(),
  base_url: z.string().optional().describe('Provider endpoint.'),
  api_key: z.string().optional().describe('A literal, ${ENV_NAME}, or keychain:<provider>.'),
  disabled: z.boolean().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  models: z.array(providerModelSchema).optional().describe('Extra models this provider offers.'),
  default_model: z.string().optional(),
  command: z.string().optional().describe('Vendor CLI or ACP child binary.'),
  args: z.array(z.string()).optional(),
  provider_options: providerOptionsSchema.optional(),
  timeout_seconds: z
    .number()
    .positive()
    .optional()
    .describe('Seconds to wait for the provider to start answering a request (default 600).'),
});

const agentToolsSchema = z
  .strictObject({
    allow: toolList.optional().describe('Explicit allowlist: only these tools.'),
    deny: toolList.optional().describe('Tools removed for this agent.'),
  })
  .catchall(z.boolean());

export const agentSchema = z.strictObject({
  description: z.string().optional(),
  model: z.string().optional(),
  mode: z.enum(['primary', 'subagent', 'all']).optional(),
  prompt: z.string().optional(),
  max_steps: z.number().int().positive().optional(),
  reasoning_effort: z.string().optional(),
  read_only: z.boolean().optional(),
  tools: agentToolsSchema.optional(),
});

export const mcpServerSchema = z.strictObject({
  type: z
    .enum(['stdio', 'http', 'sse'])
    .optional()
    .describe(
      'stdio (spawn command), http (streamable HTTP) or sse (legacy); default stdio, or http with a url.',
    ),
  command: z.string().optional().describe('stdio: the server executable (looked up in PATH).'),
  args: z.array(z.string()).optional().describe('stdio: its arguments.'),
  env: z
    .record(z.string(), z.string())
    .optional()
    .describe('stdio: extra environment (${ENV} interpolated); only HOME, PATH, … are inherited.'),
  cwd: z.string().optional().describe('stdio: working directory, relative to the workspace.'),
  url: z.string().optional().describe('http/sse: the endpoint.'),
  headers: z.record(z.string(), z.string()).optional().describe('http/sse: headers sent with every request.'),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe('Seconds per request (default 30); starting the server gets at least 10.'),
  disabled: z.boolean().optional().describe('Keep the block but never connect.'),
  auth: z.enum(['oauth', 'none']).optional().describe('oauth enables MCP client OAuth for this server.'),
  oauth: z
    .strictObject({
      client_id: z.string().optional().describe('Pre-registered client id (default: dynamic registration).'),
      client_secret: z.string().optional(),
      scopes: z.array(z.string()).optional(),
      redirect_port: z
        .number()
        .int()
        .positive()
        .optional()
        .describe('Fixed loopback port of the OAuth callback (default: any free port).'),
    })
    .optional(),
});

const presetSchema = z.strictObject({
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
});

export const optionsSchema = z.strictObject({
  data_directory: z.string().optional(),
  disabled_tools: toolList.default([]),
  disable_provider_auto_update: z.boolean().default(false),
  catalog_url: z.string().optional().describe('Where svc update-providers fetches from by default.'),
  credential_store: z
    .enum(['file', 'keyring'])
    .default('file')
    .describe(
      'Durable credential store behind keychain:<provider>: a 0600 file under the user config dir, or the OS keyring (falls back to the file when unavailable).',
    ),
  local_probe: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('With no provider configured, look for a local model server.'),
      urls: z
        .array(z.string())
        .default([
          'ollama=http://127.0.0.1:11434/v1',
          'lmstudio=http://127.0.0.1:1234/v1',
          'llamacpp=http://127.0.0.1:8080/v1',
          'vllm=http://127.0.0.1:8000/v1',
        ])
        .describe('Probed in order with GET <url>/models: <provider>=<base_url>.'),
      timeout_ms: z.number().int().positive().default(400),
      learn_window: z
        .boolean()
        .default(true)
        .describe(
          'Ask an OpenAI-compatible server for the context window of a model that sets none (Ollama /api/show, LM Studio, llama.cpp /props, vLLM max_model_len); cached in <data dir>/cache/context-windows.json.',
        ),
      window_timeout_ms: z
        .number()
        .int()
        .positive()
        .default(1500)
        .describe(
          'Time limit of the context-window probe; on timeout the turn goes on with the catalog window.',
        ),
    })
    .prefault({}),
  tpm_recovery: z
    .strictObject({
      provider_model_fallback: z.array(selector).default([]),
      max_retries: z.number().int().min(0).default(3),
      max_backoff_ms: z.number().int().min(0).default(30_000),
    })
    .prefault({}),
  operating_packs: z
    .boolean()
    .default(false)
    .describe(
      'Gates operating packs: the pack tools, the /v1/session-operating-mode routes and pack application.',
    ),
  operating_mode_presets: z
    .record(z.string(), presetSchema)
    .default({})
    .describe('Preset id → pack plus overrides, usable wherever a pack name or path is.'),
  adaptive_orchestration: z
    .strictObject({
      enabled: z
        .boolean()
        .default(false)
        .describe(
          'Adaptive orchestration: a per-session genome shapes the run (prompt guidance, plan gate, parallel sub-agents, reviewer pass, compaction threshold) and a monitor reshapes it from run signals. Registers get_adaptive_orchestration.',
        ),
      classifier: z
        .enum(['heuristic', 'config', 'off'])
        .default('heuristic')
        .describe(
          'How the first run of a session picks its genome: heuristic (from the task), config (default_preset), off (no genome; the monitor only records evaluations).',
        ),
      default_preset: z
        .enum(['solo', 'plan_then_execute', 'executor_reviewer', 'fan_out'])
        .optional()
        .describe(
          'The preset of classifier = "config" (and the heuristic fallback when the task says nothing).',
        ),
      max_parallel_agents: z
        .number()
        .int()
        .min(1)
        .max(16)
        .default(4)
        .describe('Most sub-agents a fan_out genome runs at once (the cap of max_parallel_agents).'),
      reviewer_agent: z
        .string()
        .min(1)
        .default('explore')
        .describe('Sub-agent kind of the executor_reviewer pass (a subagent-mode kind).'),
      monitor: z
        .strictObject({
          enabled: z.boolean().default(true).describe('Evaluate run signals and reshape genomes.'),
          cadence: z
            .number()
            .int()
            .positive()
            .default(1)
            .describe('Evaluate every N ended runs of a session family.'),
          window_runs: z
            .number()
            .int()
            .min(1)
            .max(50)
            .default(4)
            .describe('Ended runs (since the last reshape) whose signals an evaluation reads.'),
          regulatory_history_max_events: z
            .number()
            .int()
            .min(0)
            .default(32)
            .describe(
              'Retained regulatory history events per session; more than 0 adds regulatory_history (at most 32 per response), 0 omits it.',
            ),
          failure_rate: z
            .number()
            .min(0)
            .max(1)
            .default(0.5)
            .describe('Failed share of the window runs that proposes a reshape (with min_failures).'),
          min_failures: z.number().int().min(1).default(2).describe('Failed runs needed for run_failures.'),
          token_pressure: z
            .number()
            .min(0.1)
            .max(1)
            .default(0.8)
            .describe('Peak context-window ratio that lowers the genome compaction_threshold.'),
          pressure_compaction_threshold: z
            .number()
            .min(0.1)
            .max(1)
            .default(0.6)
            .describe('The compaction_threshold a token_pressure reshape sets.'),
          tool_errors: z
            .number()
            .int()
            .min(1)
            .default(3)
            .describe('Tool errors in the window that add a review gate.'),
        })
        .prefault({}),
      eval_shadow: z
        .strictObject({
          enabled: z
            .boolean()
            .default(true)
            .describe('Score an alternative genome on the same signals at every evaluation.'),
          min_evaluations: z
            .number()
            .int()
            .min(1)
            .default(3)
            .describe('Scored evaluations of a session before the monitor consults the shadow aggregate.'),
        })
        .prefault({}),
    })
    .prefault({}),
  health_followons: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'Health follow-ons: runtime signals (token pressure) activate rules that act (compaction).',
        ),
      emit_declarative_events: z
        .boolean()
        .default(false)
        .describe(
          'Publish health follow-on events (health.token_pressure, health_followon.activation) on the session bus.',
        ),
      token_pressure_threshold: z
        .number()
        .min(0)
        .max(1)
        .default(0.8)
        .describe(
          'Context-window ratio (input + output tokens / window) at which health.token_pressure fires.',
        ),
      summarize_after_run: z
        .boolean()
        .default(false)
        .describe(
          'Rule token_pressure.summarize: when a run ends still under token pressure (its compaction request came too late), summarize the idle session.',
        ),
      activation_caps: z
        .strictObject({
          emit_activation_telemetry_sse: z
            .boolean()
            .default(false)
            .describe('Publish health_followon.activation on the SSE session stream.'),
          process_hour_cap: z
            .number()
            .int()
            .min(0)
            .default(6)
            .describe(
              'Most dispatched activations per process in any rolling hour; past it activations are skipped (reason process_hour_cap).',
            ),
          session_hour_cap: z
            .number()
            .int()
            .min(0)
            .default(3)
            .describe(
              'Most dispatched activations per session in any rolling hour (reason session_hour_cap).',
            ),
        })
        .prefault({}),
    })
    .prefault({}),
  sandbox: sandboxSchema,
  shell_env: shellEnvSchema,
  length_recovery: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'When a step ends because the model hit its output token limit, continue the turn with a continuation instruction.',
        ),
      max_attempts: z.number().int().min(0).max(10).default(2).describe('Most continuations per run.'),
    })
    .prefault({}),
  alerts: z
    .strictObject({
      window_minutes: z
        .number()
        .int()
        .positive()
        .default(60)
        .describe('get_alerts_status looks at this many recent minutes.'),
      repeated_failures: z
        .number()
        .int()
        .positive()
        .default(3)
        .describe('Failed runs in a row (per session) that raise a repeated_failures alert.'),
      provider_errors: z
        .number()
        .int()
        .positive()
        .default(3)
        .describe('Provider errors in the window that raise an incidents alert.'),
      tool_crashes: z
        .number()
        .int()
        .positive()
        .default(1)
        .describe('Tool crashes (a tool threw a non-SvcError) in the window that raise an incidents alert.'),
      hook_failures: z
        .number()
        .int()
        .positive()
        .default(1)
        .describe('Failed or timed-out pack hooks in the window that raise a hook_failures alert.'),
    })
    .prefault({}),
  openai_compat: z
    .strictObject({
      tool_policy: z
        .enum(['none', 'read_only', 'allowed_tools', 'all'])
        .default('read_only')
        .describe(
          'Which svc tools a compat-originated run may execute: none, read_only (tools that do not mutate), allowed_tools ([permissions].allowed_tools only) or all. A denied tool is not run.',
        ),
      ledger: z
        .boolean()
        .default(true)
        .describe('Record each compat request as a run (GET /v1/openai-compat/runs).'),
      fallback_model: selector
        .optional()
        .describe('Serves a compat request whose model the resolver does not know (instead of 400).'),
      max_concurrent_runs: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          'Chat-completions requests whose agent runs at once; the others wait in the run queue. Default: 2x the CPU cores.',
        ),
      max_queued_requests: z
        .number()
        .int()
        .nonnegative()
        .default(256)
        .describe(
          'Requests that may wait in the compat run queue; past it a request gets 429 with Retry-After.',
        ),
      edit_predictions: z
        .strictObject({
          enabled: z
            .boolean()
            .default(false)
            .describe('Serve POST /v1/completions: the fill-in-the-middle edit-prediction proxy.'),
          model: selector
            .optional()
            .describe('The model the proxy forwards to (an openai-compatible provider with /completions).'),
          max_tokens: z
            .number()
            .int()
            .positive()
            .default(256)
            .describe('Upper bound of max_tokens forwarded to the provider.'),
          timeout_seconds: z.number().positive().default(30).describe('Provider request timeout.'),
        })
        .prefault({}),
    })
    .optional()
    .describe('The chat-completions compat surface; configuring it turns on its run ledger.'),
  lsp: z
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
    })
    .prefault({})
    .describe('Language servers: automatic start, diagnostics after edits, idle stop.'),
  edit_capsules: z
    .boolean()
    .default(false)
    .describe(
      "Group each agent run's file changes into an edit capsule at run end (checkpoint before the run's first change; revertible with revert_edit_capsule).",
    ),
  workspace_environment_fields: z
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
  codebase_context: z
    .strictObject({
      min_refresh_interval_seconds: z
        .number()
        .int()
        .min(0)
        .default(60)
        .describe('describe_context recomputes the codebase summary at most once per this many seconds.'),
    })
    .prefault({}),
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
  workflows: z
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
});

export const permissionsSchema = z.strictObject({
  allowed_tools: toolList.default([]).describe('Only skips permission prompts for the named tools.'),
  bash_allow: z.array(z.string()).default([]).describe('Command prefixes auto-allowed after parsing.'),
  bash_deny: z
    .array(z.string())
    .default([])
    .describe(
      'Commands blocked outright: word prefixes matched against every parsed command (e.g. "git push").',
    ),
  auto_allow_read_only_bash: z
    .boolean()
    .default(true)
    .describe('Let bash commands that analysis finds read-only run without a prompt.'),
  allow_outside_workspace: z
    .boolean()
    .default(false)
    .describe('Let file tools and bash reach paths outside the workspace (after asking).'),
  unattended: z
    .enum(['fail', 'wait'])
    .default('fail')
    .describe(
      'A permission prompt with no surface attached: fail the tool call at once (default) or wait for one to attach and answer. svc run always fails.',
    ),
});

const serviceAuth = {
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).optional(),
  token: z.string().optional(),
  allow_no_auth: z.boolean().default(false),
};

export const servicesSchema = z.strictObject({
  http: z
    .strictObject({
      ...serviceAuth,
      max_body_bytes: z
        .number()
        .int()
        .positive()
        .default(10 * 1024 * 1024),
      event_ring_size: z.number().int().positive().default(1000),
      sse_heartbeat_seconds: z
        .number()
        .positive()
        .max(3600)
        .default(15)
        .describe('Seconds between SSE heartbeat comments on idle event streams.'),
    })
    .prefault({}),
  autopilot: z
    .strictObject({
      tick_seconds: z
        .number()
        .positive()
        .max(3600)
        .default(5)
        .describe('How often the autopilot worker looks for due schedules and queued prompts.'),
      drain_queues: z
        .boolean()
        .default(true)
        .describe('Start queued prompts of idle sessions (not after a failed or cancelled run).'),
      max_concurrent_runs: z
        .number()
        .int()
        .positive()
        .default(2)
        .describe('Most runs the worker starts that are active at once.'),
      unattended: z
        .enum(['fail', 'wait'])
        .optional()
        .describe(
          'A permission prompt in a run the worker started, with nobody attached: fail or wait. Default: permissions.unattended. Never approved silently.',
        ),
    })
    .prefault({}),
  mcp: z
    .strictObject({
      ...serviceAuth,
      exposed_tools: toolList
        .optional()
        .describe(
          'MCP tool names svc service start mcp exposes (e.g. svc_get_workflow_tools_status). Unset: the read-only default set (docs/mcp.md); [] serves none.',
        ),
      transport: z
        .enum(['stdio', 'http'])
        .default('stdio')
        .describe('svc service start mcp transport; --transport overrides it.'),
    })
    .prefault({}),
});

export const lspServerSchema = z.strictObject({
  command: z.string().min(1).describe('Language server executable, e.g. typescript-language-server.'),
  args: z
    .array(z.string())
    .default([])
    .describe('Arguments, e.g. ["--stdio"]. The server speaks LSP over stdio.'),
  extensions: z
    .array(z.string().min(1))
    .min(1)
    .describe('File extensions it handles, without the dot: ["ts", "tsx"].'),
  language_id: z
    .string()
    .optional()
    .describe('LSP languageId sent for opened files; default derived from the extension.'),
  env: z.record(z.string(), z.string()).optional().describe('Extra environment variables for the server.'),
  initialization_options: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('Sent as initializationOptions.'),
  disabled: z.boolean().default(false),
});

const a2aSkillSchema = z.strictObject({
  id: z.string().min(1).describe('Skill id, unique on the card.'),
  name: z.string().min(1).optional().describe('Display name (default: the id).'),
  description: z.string().optional().describe('What the agent does with this skill.'),
  tags: z.array(z.string()).default([]).describe('Keywords a capability search matches.'),
  examples: z.array(z.string()).optional().describe('Example prompts.'),
});

export const a2aSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe(
      'Serve svc as an A2A agent on the HTTP server: the agent card at /.well-known/agent-card.json (and agent.json) and JSON-RPC message/send, tasks/get, tasks/cancel at /a2a. Bearer auth applies.',
    ),
  name: z.string().min(1).optional().describe('Agent card name (default svc).'),
  description: z
    .string()
    .optional()
    .describe('Agent card description (default: the agent kind description).'),
  agent: z.string().min(1).default('build').describe('Agent kind that runs A2A tasks (a primary kind).'),
  model: selector.optional().describe('Model selector for A2A tasks (default: the usual selection).'),
  skills: z
    .array(a2aSkillSchema)
    .default([])
    .describe('Skills advertised on the card (default: one skill for the agent kind).'),
  max_wait_seconds: z
    .number()
    .positive()
    .max(3600)
    .default(120)
    .describe('How long a blocking message/send waits for the task before answering with a working task.'),
  remotes: z
    .record(
      z.string(),
      z.strictObject({
        url: z.string().min(1).describe('Base URL of the remote agent, or the URL of its agent card.'),
        token: z.string().optional().describe('Bearer token sent to it (use ${ENV_NAME}).'),
        description: z.string().optional(),
      }),
    )
    .default({})
    .describe('Known remote A2A agents, by name: a2a_delegate reaches them by name or capability.'),
});

export const deployTargetSchema = z.strictObject({
  command: z
    .array(z.string().min(1))
    .min(1)
    .describe(
      'Argv prefix that runs a command on the target machine, e.g. ["ssh", "-o", "SendEnv=SVC_HTTP_TOKEN", "build-box"]. The token travels in the SVC_HTTP_TOKEN environment variable.',
    ),
  host: z.string().min(1).describe('Address the deployed agents are reached at from here.'),
  listen_host: z.string().default('0.0.0.0').describe('Address the service listens on at the target.'),
  svc_command: z
    .array(z.string().min(1))
    .default(['svc'])
    .describe('How to run svc on the target (after the prefix).'),
  workspace: z
    .string()
    .optional()
    .describe('Workspace directory on the target (default: this workspace path).'),
  data_dir: z
    .string()
    .optional()
    .describe(
      'Base data directory on the target; each agent gets <data_dir>/<name> (default <workspace>/.svc/deploy).',
    ),
  description: z.string().optional(),
});

export const deploySchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe(
      'Allow remote lifecycle operations (deploy targets other than local). Local deploys need no config.',
    ),
  targets: z.record(z.string(), deployTargetSchema).default({}).describe('Remote deploy targets, by name.'),
  command: z
    .array(z.string().min(1))
    .optional()
    .describe('How to run svc for local deploys (default: this same svc binary).'),
  ready_timeout_seconds: z
    .number()
    .positive()
    .max(600)
    .default(30)
    .describe('How long a deploy waits for the service to listen and report ready.'),
});

const obligationBase = {
  description: z.string().optional().describe('What the obligation checks, for people.'),
  disabled: z.boolean().default(false).describe('Keep the obligation but skip it.'),
};

export const obligationSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('command'),
    command: z.string().min(1).describe('Shell command that must exit 0 (tests, lint).'),
    timeout_seconds: z.number().int().positive().max(600).optional().describe('Default 300.'),
    ...obligationBase,
  }),
  z.strictObject({
    kind: z.literal('file_exists'),
    path: z.string().min(1).describe('Workspace-relative path that must exist.'),
    ...obligationBase,
  }),
  z.strictObject({
    kind: z.literal('no_markers'),
    marker_kind: z
      .enum(['note', 'todo', 'warning', 'handoff', 'in_progress'])
      .default('todo')
      .describe('Workspace marker kind that must have no open markers (default todo).'),
    path: z
      .string()
      .optional()
      .describe('Only markers overlapping this path (default: the whole workspace).'),
    ...obligationBase,
  }),
  z.strictObject({
    kind: z.literal('plan_approved'),
    ...obligationBase,
  }),
]);

export const telemetrySchema = z.strictObject({
  otlp_endpoint: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      'OTLP/HTTP base URL (traces go to <url>/v1/traces, metrics to <url>/v1/metrics). Unset, the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT variables turn telemetry on; neither, it is off and no OpenTelemetry code loads.',
    ),
  include_content: z
    .boolean()
    .default(false)
    .describe('Put prompts, model answers and tool inputs/results (redacted, truncated) on spans.'),
  service_name: z.string().min(1).default('svc').describe('service.name of the exported resource.'),
  metrics_interval_ms: z
    .number()
    .int()
    .min(100)
    .default(15_000)
    .describe('How often metrics are pushed over OTLP.'),
});

export const budgetSchema = z.strictObject({
  session_usd: z
    .number()
    .positive()
    .optional()
    .describe(
      'Spend limit per session (its model calls, USD from the catalog): new runs stop once it is reached.',
    ),
  daily_usd: z
    .number()
    .positive()
    .optional()
    .describe('Spend limit per UTC day across every session: new runs stop once it is reached.'),
});

export const configSchema = z.strictObject({
  models: z
    .strictObject({ large: selector.optional(), small: selector.optional() })
    .prefault({})
    .describe('Default selectors for main turns (large) and cheap internal calls (small).'),
  providers: z.record(z.string(), providerSchema).default({}),
  options: optionsSchema.prefault({}),
  agents: z.record(z.string(), agentSchema).default({}),
  permissions: permissionsSchema.prefault({}),
  mcp: z.record(z.string(), mcpServerSchema).default({}),
  lsp: z
    .record(z.string(), lspServerSchema)
    .default({})
    .describe('Language servers for the diagnostics tool, by id ([lsp.typescript]).'),
  services: servicesSchema.prefault({}),
  auth: z
    .record(z.string(), z.record(z.string(), z.string()))
    .default({})
    .describe('Per-platform OAuth endpoint overrides (tests, enterprise hosts).'),
  tui: z
    .strictObject({
      theme: z.string().default('auto'),
      compact: z.boolean().default(false),
      checkpoint_prompts: z
        .boolean()
        .default(true)
        .describe(
          'Take a git checkpoint before each prompt the TUI sends, so /undo can restore the workspace to before it (git workspaces only).',
        ),
    })
    .prefault({}),
  log: z.strictObject({ level: z.enum(['debug', 'info', 'warn', 'error']).default('info') }).prefault({}),
  a2a: a2aSchema.prefault({}),
  deploy: deploySchema.prefault({}),
  telemetry: telemetrySchema.prefault({}).describe('OpenTelemetry traces and metrics (docs/telemetry.md).'),
  budget: budgetSchema.prefault({}).describe('Spend limits checked before each new run (docs/telemetry.md).'),
  contracts: z
    .record(z.string(), obligationSchema)
    .default({})
    .describe(
      'Workspace contract: obligations by id ([contracts.tests] kind = "command", command = "npm test").',
    ),
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type AgentConfig = z.output<typeof agentSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type LspServerConfig = z.output<typeof lspServerSchema>;
export type A2aConfig = z.output<typeof a2aSchema>;
export type DeployConfig = z.output<typeof deploySchema>;
export type DeployTarget = z.output<typeof deployTargetSchema>;
export type Obligation = z.output<typeof obligationSchema>;
export type TelemetryConfig = z.output<typeof telemetrySchema>;
export type BudgetConfig = z.output<typeof budgetSchema>;
