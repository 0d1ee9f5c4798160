/**
 * `svc trust [path]`, `svc trust --revoke [path]`, `svc trust --list`: the workspaces whose own
 * config may set the keys that run commands, loosen permissions or name remote endpoints
 * (config/trust.ts). Kept in the user's config directory, never in the workspace; no App is built.
 * @module
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { SvcError } from '../../../errors';
import type { CliContext, CliRegistrar } from '../context';

interface TrustOptions {
  revoke?: boolean;
  list?: boolean;
  json?: boolean;
}

export const registerTrust: CliRegistrar = (program, ctx) => {
  program
    .command('trust')
    .description(
      "trust a workspace's own svc.toml (its keys that run commands, loosen permissions or name remote endpoints); remembered for this user",
    )
    .argument('[path]', 'the workspace (default: --cwd or the current directory)')
    .option('--revoke', 'forget the trust of the workspace')
    .option('--list', 'list the trusted workspaces')
    .option('--json', 'print the result as JSON')
    .action((path: string | undefined, options: TrustOptions) => trustCommand(ctx, path, options));
};

async function trustCommand(ctx: CliContext, path: string | undefined, options: TrustOptions) {
  const { globalConfigDir, loadConfig } = await import('../../../config/load');
  const trust = await import('../../../config/trust');
  const configDir = globalConfigDir(ctx.io.env);
  if (options.list) {
    if (path || options.revoke)
      throw new SvcError('invalid_input', 'svc trust --list takes no path and no --revoke');
    const list = trust.listTrustedWorkspaces(configDir);
    if (options.json) return ctx.json({ store: trust.trustStorePath(configDir), workspaces: list });
    if (list.length === 0) return ctx.out('no trusted workspaces (svc trust [path] adds one)');
    return ctx.out(list.map((w) => `${w.path}    # trusted ${w.trusted_at}`).join('\n'));
  }
  const workspace = resolve(ctx.io.cwd, path ?? ctx.globals().cwd ?? '.');
  if (options.revoke) {
    const result = trust.revokeWorkspace(configDir, workspace);
    if (options.json) return ctx.json(result);
    return ctx.out(result.removed ? `no longer trusted: ${result.path}` : `was not trusted: ${result.path}`);
  }
  if (!isDirectory(workspace))
    throw new SvcError('invalid_input', `path: ${workspace} is not a directory; give the workspace to trust`);
  // What the trust lets through, as the workspace's files say it now.
  const risky = loadConfig({ workspace, env: ctx.io.env, trust: { interactive: true } }, { tolerant: true })
    .trust?.risky;
  const result = trust.trustWorkspace(configDir, workspace);
  if (options.json) return ctx.json({ ...result, keys: risky ?? [] });
  ctx.out(`${result.already ? 'already trusted' : 'trusted'}: ${result.path}`);
  if (risky?.length)
    ctx.out(
      [
        'its config now sets:',
        ...risky.map((k) => `  ${k.key} = ${k.detail}    # ${k.file ?? 'workspace'}`),
      ].join('\n'),
    );
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
