/**
 * The one config schema: every key the spec's config table names, plus what svc adds.
 * Own inputs are strict objects so an unknown key is found by name (and reported as a warning).
 * @module
 */
import { z } from 'zod';

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
      enabled: z.boolean().default(false),
      classifier: z.enum(['heuristic', 'config', 'off']).default('heuristic'),
      default_preset: z.string().optional(),
      monitor: z
        .strictObject({
          enabled: z.boolean().default(true),
          cadence: z.number().int().positive().default(1).describe('Evaluate every N completed runs.'),
          regulatory_history_max_events: z.number().int().min(0).default(32),
        })
        .prefault({}),
    })
    .prefault({}),
  health_followons: z
    .strictObject({
      enabled: z.boolean().default(true),
      emit_declarative_events: z.boolean().default(false),
      token_pressure_threshold: z.number().min(0).max(1).default(0.8),
      activation_caps: z
        .strictObject({
          emit_activation_telemetry_sse: z.boolean().default(false),
          process_hour_cap: z.number().int().min(0).default(6),
        })
        .prefault({}),
    })
    .prefault({}),
  openai_compat: z
    .strictObject({
      tool_policy: z.enum(['none', 'read_only', 'allowed_tools', 'all']).default('read_only'),
      ledger: z.boolean().default(true),
      edit_predictions: z
        .strictObject({ enabled: z.boolean().default(false), model: z.string().optional() })
        .prefault({}),
    })
    .optional(),
  edit_capsules: z.boolean().default(false),
  workspace_environment_fields: z.record(z.string(), z.unknown()).optional(),
  codebase_context: z
    .strictObject({ min_refresh_interval_seconds: z.number().int().min(0).default(60) })
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
  auto_compact: z.boolean().default(true),
  compaction_threshold: z.number().min(0.1).max(1).default(0.85),
  loop_detection: z.strictObject({ max_repeats: z.number().int().min(2).default(4) }).prefault({}),
  bash: z
    .strictObject({
      timeout_seconds: z.number().int().positive().default(120),
      max_output_bytes: z.number().int().positive().default(30_000),
    })
    .prefault({}),
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
  mcp: z
    .strictObject({
      ...serviceAuth,
      exposed_tools: toolList
        .default([])
        .describe('MCP tool names svc service start mcp exposes (e.g. svc_get_workflow_tools_status).'),
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
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type AgentConfig = z.output<typeof agentSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type LspServerConfig = z.output<typeof lspServerSchema>;
