/**
 * `svc auth summary | token | logout`: the redacted credential mode of the large model, storing an
 * API key read from standard input (the one `storeKey()`), forgetting a stored credential; and
 * `print`, which every auth command answers through (redacted, JSON with --json).
 * @module
 */
import type { Command } from 'commander';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import { forgetKey, keyTarget, type StoredKey, storeKey } from '../../../providers/credentials';
import type { CliContext } from '../context';

export function registerCredentialCommands(auth: Command, ctx: CliContext): void {
  auth
    .command('summary')
    .description(
      'the redacted credential mode of the configured large model (source kind, last 4 chars at most)',
    )
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const app = await ctx.app();
      const { authSummary } = await import('../../../providers/reports');
      const summary = app.redactor.value(authSummary(app.providers));
      print(ctx, app, opts.json, summary, () =>
        [
          `model: ${summary.model ?? '(none)'} (${summary.model_source})`,
          `provider: ${summary.provider ?? '-'} (${summary.ready ? 'ready' : 'not ready'})`,
          `credential: ${summary.credential.mode}${summary.credential.source ? ` from ${summary.credential.source}` : ''}${summary.credential.last4 ? ` (${summary.credential.last4})` : ''}`,
          ...('problem' in summary && summary.problem ? [`problem: ${summary.problem}`] : []),
          ...('ambiguity' in summary && summary.ambiguity ? [`ambiguous: ${summary.ambiguity}`] : []),
        ].join('\n'),
      );
    });

  auth
    .command('token')
    .description(
      'store an API key for a provider in the durable credential store and point its api_key at keychain:<provider> in the user config',
    )
    .argument('<provider>', 'provider id')
    .option('--token-stdin', 'read the key from standard input')
    .option('--json', 'print the result as JSON')
    .action(async (provider: string, opts: { tokenStdin?: boolean; json?: boolean }) => {
      if (!opts.tokenStdin)
        throw new SvcError(
          'invalid_input',
          '--token-stdin: required (the key is read from standard input, never from the command line)',
        );
      const app = await ctx.app();
      const result = await storeToken(app, ctx, provider, 'api_key', 'svc auth token');
      print(ctx, app, opts.json, result, () => tokenText(result));
    });

  auth
    .command('logout')
    .description(
      'remove a stored credential and the keychain:<provider> line login wrote (the provider then falls back to env vars or config)',
    )
    .argument('<provider>', 'provider id')
    .option('--json', 'print the result as JSON')
    .action(async (provider: string, opts: { json?: boolean }) => {
      const app = await ctx.app();
      const result = forgetKey(app, provider);
      print(ctx, app, opts.json, result, () =>
        [
          result.removed ? `${provider}: stored credential removed` : `${provider}: nothing was stored`,
          ...result.sentinel_removed_from.map(
            (file) => `${file}: providers.${provider}.api_key = "keychain:${provider}" removed`,
          ),
        ].join('\n'),
      );
    });
}

/** The key from standard input, stored the one way (providers/credentials.ts storeKey). */
export async function storeToken(
  app: App,
  ctx: CliContext,
  provider: string,
  kind: 'api_key' | 'bearer',
  by: string,
  type?: string,
): Promise<StoredKey> {
  keyTarget(app, provider, type);
  const token = (await readStdin(ctx)).trim();
  if (!token)
    throw new SvcError(
      'invalid_input',
      'token: standard input was empty; pipe the token in, e.g. printf %s "$TOKEN" | svc auth … --token-stdin',
    );
  return storeKey(app, { provider, key: token, kind, by, type });
}

export function tokenText(result: StoredKey): string {
  return [
    `${result.provider}: ${result.kind === 'bearer' ? 'bearer token' : 'API key'} stored (${result.backend} store)`,
    result.sentinel_written
      ? `${result.config_file}: providers.${result.provider}.api_key = "keychain:${result.provider}"`
      : 'no durable store: nothing written to config',
    ...(result.shadowed_by
      ? [
          `warning: ${result.shadowed_by} sets providers.${result.provider}.api_key, which wins over the user config; remove that line to use the stored key`,
        ]
      : []),
  ].join('\n');
}

function readStdin(ctx: CliContext): Promise<string> {
  const stdin = ctx.io.stdin;
  if (!stdin) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    let text = '';
    stdin.setEncoding?.('utf8');
    stdin.on('data', (chunk: string | Buffer) => {
      text += chunk.toString();
      if (text.length > 64 * 1024)
        reject(new SvcError('invalid_input', 'token: more than 64 KiB on standard input'));
    });
    stdin.on('end', () => resolve(text));
    stdin.on('error', reject);
  });
}

/** Everything printed goes through the redactor, whatever the command put together. */
export function print(
  ctx: CliContext,
  app: App,
  json: boolean | undefined,
  value: unknown,
  text: () => string,
) {
  if (json) ctx.json(app.redactor.value(value));
  else ctx.out(app.redactor.string(text()));
}
