/**
 * Config tools: `config` (read, set, unset, reload, validate, refresh), `get_config`,
 * `get_config_field_provenance`, and `config_status` / `get_config_status` (one definition).
 * @module
 */
import { join, relative } from 'node:path';
import { z } from 'zod';
import { explainConfig } from '../config/explain';
import { type ConfigSourcesInput, formatIssue, loadConfig } from '../config/load';
import { seedSecrets } from '../config/secrets';
import { parseConfigValue, writeConfigKey } from '../config/write';
import { SvcError } from '../errors';
import { createRedactor } from '../redact';
import { VERSION } from '../version';
import { defineTool } from './core/define-tool';
import type { DbStatus, ToolHost } from './core/types';

const configValue = () =>
  z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number(), z.boolean()]))]);

export const configInput = () =>
  z.strictObject({
    action: z
      .enum(['read', 'set', 'unset', 'reload', 'validate', 'refresh'])
      .default('read')
      .describe(
        'read: effective value(s); set/unset: edit the workspace svc.toml; reload: re-read config files; validate: check without applying; refresh: reload and report tool-set changes.',
      ),
    key: z
      .string()
      .min(1)
      .optional()
      .describe('Dotted config key, e.g. options.disabled_tools. Omit to read everything.'),
    value: configValue()
      .optional()
      .describe('New value for set. Strings, numbers, booleans or a list of them.'),
  });

export const config = defineTool({
  name: 'config',
  family: 'config',
  tag: 'primitive',
  description:
    'Read or change svc configuration. read returns effective values with their source; set/unset edit the workspace svc.toml atomically after validating; reload re-reads config files; validate checks the config files without applying them; refresh reloads and reports which tools were added or removed.',
  input: configInput,
  mutates: true,
  surfaces: {
    mcp: 'svc_config',
    cli: [
      {
        command: 'config get',
        args: ['key?'],
        fixed: { action: 'read' },
        description: 'effective value(s) with their source',
      },
      {
        command: 'config set',
        args: ['key', 'value'],
        fixed: { action: 'set' },
        description: 'set a key in the workspace svc.toml (validated first; written atomically)',
        prepare: (input) => ({
          ...input,
          value: typeof input.value === 'string' ? parseConfigValue(input.value) : input.value,
        }),
      },
      {
        command: 'config unset',
        args: ['key'],
        fixed: { action: 'unset' },
        description: 'remove a key from the workspace svc.toml',
      },
      {
        command: 'config validate',
        fixed: { action: 'validate' },
        description: 'check every config file without applying it',
        exitCode: (r: { valid: boolean }) => (r.valid ? 0 : 2),
        // Without the App: a config whose store URL is unreachable (or that does not load) is
        // what this command is for.
        // --config and -c are checked too: they are part of what a run would load.
        standalone: (_input, sources) => validateConfig(sources),
      },
      { command: 'config reload', fixed: { action: 'reload' }, description: 're-read the config files' },
    ],
  },
  async run(ctx, input) {
    const { app } = ctx;
    switch (input.action) {
      case 'read':
        return { action: 'read', fields: explainConfig(app.loaded, app.redactor, input.key) };
      case 'set':
      case 'unset': {
        if (!input.key) throw new SvcError('invalid_input', `key: required for action ${input.action}`);
        if (input.action === 'set' && input.value === undefined) {
          throw new SvcError('invalid_input', 'value: required for action set');
        }
        const file = join(app.workspace, 'svc.toml');
        await ctx.ask({
          tool: 'config',
          title: `${input.action} ${input.key} in ${relative(app.workspace, file) || file}`,
          scope: `config:${input.key}`,
          details: { key: input.key },
        });
        // The file must load as a whole (interpolation, allowlists…), not only match the schema.
        const result = writeConfigKey(file, input.key, input.action === 'set' ? input.value : undefined, {
          check: (text) => app.checkConfig({ [file]: text }),
        });
        app.reloadConfig();
        return {
          action: input.action,
          key: input.key,
          file: result.file,
          changed: result.changed,
          fields: input.action === 'set' ? explainConfig(app.loaded, app.redactor, input.key) : [],
        };
      }
      case 'reload': {
        const next = app.reloadConfig();
        return { action: 'reload', files: next.files, warnings: next.warnings };
      }
      case 'validate':
        return validateConfig({
          workspace: app.workspace,
          env: app.env as Record<string, string | undefined>,
        });
      case 'refresh': {
        const before = new Set(app.tools.registered().map((t) => t.name));
        const next = app.reloadConfig();
        const after = new Set(app.tools.registered().map((t) => t.name));
        return {
          action: 'refresh',
          warnings: next.warnings,
          tools_added: [...after].filter((n) => !before.has(n)).sort(),
          tools_removed: [...before].filter((n) => !after.has(n)).sort(),
        };
      }
      default: {
        const never: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${never}`);
      }
    }
  },
});

/** Every config file checked, nothing applied: each error with its file, line and text. */
function validateConfig(sources: ConfigSourcesInput) {
  const { env } = sources;
  const check = loadConfig(sources, { tolerant: true });
  // The values an error quotes may be secrets: scrubbed as the App's redactor would.
  const redactor = createRedactor();
  seedSecrets(redactor, check, env);
  return redactor.value({
    action: 'validate' as const,
    valid: check.errors.length === 0,
    errors: check.errors.map((e) => ({ ...e, text: formatIssue(e) })),
    warnings: check.warnings,
    files: check.files,
  });
}

export const getConfigInput = () =>
  z.strictObject({
    key: z.string().min(1).optional().describe('Dotted config key; omit for the whole effective config.'),
  });

export const getConfig = defineTool({
  name: 'get_config',
  family: 'config',
  tag: 'primitive',
  description: 'The effective configuration (secrets redacted), or one key of it.',
  input: getConfigInput,
  mutates: false,
  run: async (ctx, input) => {
    const fields = explainConfig(ctx.app.loaded, ctx.app.redactor, input.key).filter((f) => !f.dropped);
    return { key: input.key ?? null, values: Object.fromEntries(fields.map((f) => [f.key, f.value])) };
  },
});

export const getConfigFieldProvenance = defineTool({
  name: 'get_config_field_provenance',
  family: 'config',
  tag: 'primitive',
  description: 'Where each effective config field comes from: a file, an env var, a flag or the default.',
  input: getConfigInput,
  mutates: false,
  surfaces: {
    cli: {
      command: 'config explain',
      args: ['key?'],
      description: 'every effective config field (or one), its value and its source',
      text: (result: { fields: { key: string; value: unknown; source: string }[] }) =>
        result.fields.map((f) => `${f.key} = ${JSON.stringify(f.value)}    # ${f.source}`).join('\n'),
    },
  },
  run: async (ctx, input) => ({ fields: explainConfig(ctx.app.loaded, ctx.app.redactor, input.key) }),
});

export function configStatus(app: ToolHost, database: DbStatus = app.dbStatus()) {
  const loaded = app.loaded;
  const sections: Record<string, unknown> = {};
  for (const [name, build] of app.statusSections) {
    try {
      sections[name] = build();
    } catch (error) {
      sections[name] = { error: SvcError.is(error) ? error.message : String(error) };
    }
  }
  return app.redactor.value({
    version: VERSION,
    workspace: app.workspace,
    data_dir: app.dataDir,
    log_file: join(app.dataDir, 'logs', 'svc.log'),
    files: loaded.files,
    errors: loaded.errors.map(formatIssue),
    warnings: loaded.warnings,
    database,
    providers_configured: Object.keys(loaded.config.providers).sort(),
    mcp_servers_configured: Object.keys(loaded.config.mcp).sort(),
    ...sections,
  });
}

const configStatusDef = defineTool({
  name: 'config_status',
  family: 'config',
  tag: 'primitive',
  description:
    'Config status: the config files looked at and found, parse errors, warnings, the data dir and the database status.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/config-status' },
    mcp: 'svc_config_status',
    cli: {
      command: 'config show-config-status',
      description: 'files, warnings, data dir and database status',
      text: renderConfigStatus,
    },
  },
  run: async (ctx) => configStatus(ctx.app, await (ctx.app.dbStatusChecked?.() ?? ctx.app.dbStatus())),
});

export const configStatusTool = configStatusDef;
/** spec: `config_status` and `get_config_status` come from the same tool definition. */
export const getConfigStatusTool = {
  ...configStatusDef,
  name: 'get_config_status',
  surfaces: { mcp: 'svc_get_config_status' },
};

function renderConfigStatus(status: ReturnType<typeof configStatus>): string {
  const lines = [
    `workspace   ${status.workspace}`,
    `data dir    ${status.data_dir}`,
    `log file    ${status.log_file}`,
    `database    ${status.database.path} (${status.database.error ? `error: ${status.database.error}` : status.database.exists ? `schema ${status.database.schema_version ?? '?'}` : 'not created yet'})`,
    'config files:',
    ...status.files.map(
      (f) =>
        `  ${f.found ? 'found  ' : f.error ? 'error  ' : 'absent '} ${f.kind.padEnd(9)} ${f.path}${f.error ? `  (${f.error})` : ''}`,
    ),
  ];
  if (status.errors.length) lines.push('errors:', ...status.errors.map((e) => `  ${e}`));
  if (status.warnings.length) lines.push('warnings:', ...status.warnings.map((w) => `  ${w}`));
  return lines.join('\n');
}
