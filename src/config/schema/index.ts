/**
 * The one config schema: every key the spec's config table names, plus what svc adds.
 * Own inputs are strict objects so an unknown key is found by name (and reported as a warning).
 * One file per section; this module assembles them and is what the rest of svc imports.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { a2aSchema } from './a2a';
import { agentSchema } from './agents';
import { obligationSchema } from './contracts';
import { deploySchema, deployTargetSchema } from './deploy';
import { engineSchema } from './engine';
import { lspServerSchema } from './lsp';
import { mcpServerSchema } from './mcp';
import { optionsSchema } from './options';
import { permissionsSchema } from './permissions';
import { providerModelSchema, providerOptionsSchema, providerSchema } from './providers';
import { servicesSchema } from './services';
import { selector } from './shared';
import { storeSchema } from './store';
import { budgetSchema, telemetrySchema } from './telemetry';

export {
  a2aSchema,
  agentSchema,
  budgetSchema,
  deploySchema,
  deployTargetSchema,
  engineSchema,
  lspServerSchema,
  mcpServerSchema,
  obligationSchema,
  optionsSchema,
  permissionsSchema,
  providerModelSchema,
  providerOptionsSchema,
  providerSchema,
  servicesSchema,
  storeSchema,
  telemetrySchema,
};

/**
 * Each top-level section's schema, built on first use (issue 17): a load whose files name only
 * `[providers]` builds that section's schema and takes the others' defaults from
 * `defaults.generated.json` (config/load.ts, `parseBySection`).
 */
export const configSections = {
  models: lazy(() =>
    z
      .strictObject({ large: selector().optional(), small: selector().optional() })
      .prefault({})
      .describe('Default selectors for main turns (large) and cheap internal calls (small).'),
  ),
  providers: lazy(() => z.record(z.string(), providerSchema()).default({})),
  options: lazy(() => optionsSchema().prefault({})),
  agents: lazy(() => z.record(z.string(), agentSchema()).default({})),
  permissions: lazy(() => permissionsSchema().prefault({})),
  mcp: lazy(() => z.record(z.string(), mcpServerSchema()).default({})),
  lsp: lazy(() =>
    z
      .record(z.string(), lspServerSchema())
      .default({})
      .describe('Language servers for the diagnostics tool, by id ([lsp.typescript]).'),
  ),
  services: lazy(() => servicesSchema().prefault({})),
  auth: lazy(() =>
    z
      .record(z.string(), z.record(z.string(), z.string()))
      .default({})
      .describe('Per-platform OAuth endpoint overrides (tests, enterprise hosts).'),
  ),
  tui: lazy(() =>
    z
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
  ),
  log: lazy(() =>
    z.strictObject({ level: z.enum(['debug', 'info', 'warn', 'error']).default('info') }).prefault({}),
  ),
  a2a: lazy(() => a2aSchema().prefault({})),
  deploy: lazy(() => deploySchema().prefault({})),
  telemetry: lazy(() =>
    telemetrySchema().prefault({}).describe('OpenTelemetry traces and metrics (docs/telemetry.md).'),
  ),
  store: lazy(() =>
    storeSchema()
      .prefault({})
      .describe('Durable state: the SQLite file (default) or PostgreSQL with url (docs/cluster.md).'),
  ),
  engine: lazy(() =>
    engineSchema()
      .prefault({})
      .describe('The run engine: in-process (default) or dbos (PostgreSQL store; docs/engine.md).'),
  ),
  budget: lazy(() =>
    budgetSchema().prefault({}).describe('Spend limits checked before each new run (docs/telemetry.md).'),
  ),
  security: lazy(() =>
    z
      .strictObject({
        workspace_trust: z
          .enum(['ask', 'require', 'off'])
          .default('ask')
          .describe(
            "The gate on a workspace's own svc.toml keys that run commands, loosen permissions or name remote endpoints (docs/permissions.md): ask (default: the TUI asks for an untrusted workspace, headless surfaces use the keys), require (headless surfaces too drop them until `svc trust`), off. Read from the user's config, SVC_CONFIG, --config and -c only.",
          ),
      })
      .prefault({}),
  ),
  contracts: lazy(() =>
    z
      .record(z.string(), obligationSchema())
      .default({})
      .describe(
        'Workspace contract: obligations by id ([contracts.tests] kind = "command", command = "npm test").',
      ),
  ),
};

export type ConfigSection = keyof typeof configSections;

export const configSchema = lazy(() =>
  z.strictObject({
    models: configSections.models(),
    providers: configSections.providers(),
    options: configSections.options(),
    agents: configSections.agents(),
    permissions: configSections.permissions(),
    mcp: configSections.mcp(),
    lsp: configSections.lsp(),
    services: configSections.services(),
    auth: configSections.auth(),
    tui: configSections.tui(),
    log: configSections.log(),
    a2a: configSections.a2a(),
    deploy: configSections.deploy(),
    telemetry: configSections.telemetry(),
    store: configSections.store(),
    engine: configSections.engine(),
    budget: configSections.budget(),
    security: configSections.security(),
    contracts: configSections.contracts(),
  }),
);

export type Config = z.output<ReturnType<typeof configSchema>>;
export type ConfigInput = z.input<ReturnType<typeof configSchema>>;
export type ProviderConfig = z.output<ReturnType<typeof providerSchema>>;
export type AgentConfig = z.output<ReturnType<typeof agentSchema>>;
export type McpServerConfig = z.output<ReturnType<typeof mcpServerSchema>>;
export type LspServerConfig = z.output<ReturnType<typeof lspServerSchema>>;
export type A2aConfig = z.output<ReturnType<typeof a2aSchema>>;
export type DeployConfig = z.output<ReturnType<typeof deploySchema>>;
export type DeployTarget = z.output<ReturnType<typeof deployTargetSchema>>;
export type Obligation = z.output<ReturnType<typeof obligationSchema>>;
export type TelemetryConfig = z.output<ReturnType<typeof telemetrySchema>>;
export type BudgetConfig = z.output<ReturnType<typeof budgetSchema>>;
export type StoreConfig = z.output<ReturnType<typeof storeSchema>>;
export type EngineConfig = z.output<ReturnType<typeof engineSchema>>;
