/**
 * Plugins (spec, Plugins; TOOLS-57/58): `plugin_list`, and `plugin_install`, `plugin_update`,
 * `plugin_remove`, which need approval: each asks (`ctx.ask`) with the manifest summary, whatever
 * the surface, and a denial changes nothing. Every change is recorded (`plugin_events`).
 * @module
 */
import { z } from 'zod';
import type { ChangeOptions } from '../plugins/plugin-service';
import { type AnyTool, defineTool, type ToolContext } from './core/define-tool';

const nameField = () => z.string().min(1).describe('Name of an installed plugin (see plugin_list).');
const refField = () =>
  z
    .string()
    .min(1)
    .optional()
    .describe('Git sources only: the branch or tag to check out (default: the default branch).');

export const pluginList = defineTool({
  name: 'plugin_list',
  family: 'plugins',
  tag: 'primitive',
  description:
    'List installed plugins: name, version, source (directory or git URL and commit), status, and what each provides (MCP servers, agent kinds, operating packs, recipes, commands), with the latest install/update/remove records.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_plugin_list', cli: { command: 'plugin list' } },
  run: async (ctx) => ({
    plugins: await ctx.app.plugins.list(),
    recent_changes: await ctx.app.plugins.events(20),
  }),
});

export const pluginInstall = defineTool({
  name: 'plugin_install',
  family: 'plugins',
  tag: 'primitive',
  description:
    'Install a plugin from a local directory or a git repository URL: a bundle with an svc-plugin.toml manifest of MCP servers, agent kinds, operating packs, recipes and commands. Needs approval: the operator sees the manifest summary first.',
  input: () =>
    z.strictObject({
      source: z
        .string()
        .min(1)
        .describe(
          'A plugin directory (absolute or workspace-relative) or a git URL (file://, https://, ssh://, git@host:repo, *.git).',
        ),
      ref: refField(),
    }),
  mutates: true,
  asksPermission: true,
  surfaces: { mcp: 'svc_plugin_install', cli: { command: 'plugin install', args: ['source'] } },
  parity: false,
  run: async (ctx, input) => ctx.app.plugins.install(input, changeOptions(ctx, 'plugin_install')),
});

export const pluginUpdate = defineTool({
  name: 'plugin_update',
  family: 'plugins',
  tag: 'primitive',
  description:
    'Update an installed plugin from where it was installed (or from a new source): fetch it again, check its manifest, and swap it in. Needs approval: the operator sees the version change and what it provides.',
  input: () =>
    z.strictObject({
      name: nameField(),
      source: z
        .string()
        .min(1)
        .optional()
        .describe('Install from here instead of the recorded source (same plugin name).'),
      ref: refField(),
    }),
  mutates: true,
  asksPermission: true,
  surfaces: { mcp: 'svc_plugin_update', cli: { command: 'plugin update', args: ['name'] } },
  parity: false,
  run: async (ctx, input) => ctx.app.plugins.update(input, changeOptions(ctx, 'plugin_update')),
});

export const pluginRemove = defineTool({
  name: 'plugin_remove',
  family: 'plugins',
  tag: 'primitive',
  description:
    'Remove an installed plugin: its files are deleted and its MCP servers, agent kinds, packs, recipes and commands disappear. Needs approval.',
  input: () => z.strictObject({ name: nameField() }),
  mutates: true,
  asksPermission: true,
  surfaces: { mcp: 'svc_plugin_remove', cli: { command: 'plugin remove', args: ['name'] } },
  parity: false,
  run: async (ctx, input) => ctx.app.plugins.remove(input, changeOptions(ctx, 'plugin_remove')),
});

function changeOptions(ctx: ToolContext, tool: string): ChangeOptions {
  return {
    // TOOLS-58: the approval names the plugin and carries its manifest summary.
    ask: (request) =>
      ctx.ask({
        tool,
        title: request.title,
        scope: `${tool}:${request.scope ?? String(request.details.name)}`,
        details: request.details,
      }),
    by: ctx.surface,
    sessionId: ctx.sessionId,
    signal: ctx.signal,
  };
}

export const pluginTools = [pluginList, pluginInstall, pluginUpdate, pluginRemove] as AnyTool[];
