/**
 * The one config schema: every key the spec's config table names, plus what svc adds.
 * Own inputs are strict objects so an unknown key is found by name (and reported as a warning).
 * One file per section; this module assembles them and is what the rest of svc imports.
 * @module
 */
import { z } from 'zod';
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
  store: storeSchema
    .prefault({})
    .describe('Durable state: the SQLite file (default) or PostgreSQL with url (docs/cluster.md).'),
  engine: engineSchema
    .prefault({})
    .describe('The run engine: in-process (default) or dbos (PostgreSQL store; docs/engine.md).'),
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
export type StoreConfig = z.output<typeof storeSchema>;
export type EngineConfig = z.output<typeof engineSchema>;
