/**
 * `svc auth …`: the human-only credential bootstrap and checks (spec, Authentication).
 *   svc auth copilot | hyper | openrouter | chatgpt   OAuth sign-in (interactive)
 *   svc auth claude | codex | gemini                  vendor CLI setup check (stores nothing)
 *   svc auth bedrock [provider] | doctor | token <provider> --token-stdin
 *   svc auth vertex [doctor], svc auth azure [doctor] cloud identity checks
 *   svc auth summary                                  redacted credential mode of the large model
 *   svc auth token <provider> --token-stdin           store an API key (writes keychain:<provider>)
 *   svc auth logout <provider>                        forget a stored credential
 * Prompts (codes, URLs) go to stderr; the result goes to stdout (JSON with --json).
 * @module
 */
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import { keyTarget, type StoredKey, storeKey } from '../../../providers/credentials';
import type { CliContext, CliRegistrar } from '../context';
import { ensureCommand } from '../tool-commands';

const OAUTH_PLATFORMS = ['copilot', 'hyper', 'openrouter', 'chatgpt'] as const;
const CLI_PLATFORMS = ['claude', 'codex', 'gemini'] as const;

export const registerAuthCommands: CliRegistrar = (program, ctx) => {
  const auth = ensureCommand(
    program,
    ['auth'],
    'provider sign-in and credential checks (human-only OAuth bootstrap)',
  );

  for (const platform of OAUTH_PLATFORMS) {
    auth
      .command(platform)
      .description(`sign in to ${platformName(platform)} (${oauthFlow(platform)})`)
      .option('--force', 'ignore tokens found on disk and run the full sign-in')
      .option('--json', 'print the result as JSON')
      .action(async (opts: { force?: boolean; json?: boolean }) => {
        const app = await ctx.app();
        refuseAgents(app, platform);
        const result = await runOAuth(app, ctx, platform, opts.force === true);
        print(ctx, app, opts.json, result, () =>
          [
            `${platform}: signed in (${result.method})`,
            ...(result.expires_at ? [`access token expires ${result.expires_at}`] : []),
          ].join('\n'),
        );
      });
  }

  for (const kind of CLI_PLATFORMS) {
    auth
      .command(kind)
      .description(
        `check that the ${kind} vendor CLI is installed and logged in (stores nothing, reads no tokens)`,
      )
      .option('--json', 'print the result as JSON')
      .action(async (opts: { json?: boolean }) => {
        const app = await ctx.app();
        const { checkVendorCli, cliCommand } = await import('../../../providers/vendor-cli');
        const entry = app.providers.entries().find((e) => e.cli_kind === kind);
        const result = await checkVendorCli({
          kind,
          command: cliCommand(kind, app.config.auth, entry?.config?.command),
          env: app.env,
          cwd: app.workspace,
          signal: ctx.io.signal,
        });
        print(ctx, app, opts.json, result, () =>
          [
            `${result.name}: ${result.installed ? `installed (${result.path}${result.version ? `, ${result.version}` : ''})` : 'not installed'}`,
            `logged in: ${result.logged_in === null ? 'unknown' : result.logged_in ? 'yes' : 'no'} (${result.login_check})`,
            ...(result.next_step ? [`next: ${result.next_step}`] : []),
            'svc stored nothing and read no vendor token files.',
          ].join('\n'),
        );
        if (!result.installed || result.logged_in === false) ctx.exitCode = 1;
      });
  }

  auth
    .command('bedrock')
    .description(
      'Amazon Bedrock identity: `bedrock [provider]` checks, `bedrock doctor` inspects every source, `bedrock token <provider> --token-stdin` stores a bearer token',
    )
    .argument('[args...]', 'doctor [provider] | token <provider> | <provider>')
    .option('--token-stdin', 'read the bearer token from standard input (with token)')
    .option('--json', 'print the result as JSON')
    .action(async (args: string[], opts: { tokenStdin?: boolean; json?: boolean }) => {
      const app = await ctx.app();
      const { bedrockDoctor } = await import('../../../providers/reports');
      const [first, second] = args;
      if (first === 'token') {
        if (!second)
          throw new SvcError(
            'invalid_input',
            'provider: required: svc auth bedrock token <provider> --token-stdin',
          );
        if (!opts.tokenStdin)
          throw new SvcError(
            'invalid_input',
            '--token-stdin: required (the token is read from standard input, never from the command line)',
          );
        const result = await storeToken(
          app,
          ctx,
          second,
          'bearer',
          'svc auth bedrock token',
          'amazon-bedrock',
        );
        print(ctx, app, opts.json, result, () => tokenText(result));
        return;
      }
      const doctor = first === 'doctor';
      const reports = bedrockDoctor(app.providers, doctor ? second : first);
      const configured = reports.filter((r) => app.providers.entry(r.provider)?.configured || r.ready);
      const shown = doctor ? reports : configured.length ? configured : reports;
      print(ctx, app, opts.json, doctor ? { doctor: true, providers: reports } : { providers: shown }, () =>
        shown.map((r) => bedrockText(r, doctor)).join('\n\n'),
      );
      if (!doctor && !shown.some((r) => r.ready)) ctx.exitCode = 1;
    });

  for (const platform of ['vertex', 'azure'] as const) {
    auth
      .command(platform)
      .description(
        `${platform === 'vertex' ? 'Google Vertex AI' : 'Azure OpenAI'} identity check (\`${platform} doctor\` shows every provider of the family)`,
      )
      .argument('[args...]', 'doctor [provider] | <provider>')
      .option('--json', 'print the result as JSON')
      .action(async (args: string[], opts: { json?: boolean }) => {
        const app = await ctx.app();
        const { cloudIdentity } = await import('../../../providers/reports');
        const doctor = args[0] === 'doctor';
        const wanted = doctor ? args[1] : args[0];
        const all = cloudIdentity(app.providers)[platform].filter(
          (r): r is NonNullable<typeof r> => r !== null && (!wanted || r.provider === wanted),
        );
        if (wanted && all.length === 0)
          throw new SvcError('not_found', `provider: "${wanted}" is not a ${platform} provider`);
        print(ctx, app, opts.json, { doctor, providers: all }, () =>
          all
            .map((r) =>
              [
                `${r.provider}: ${r.ready ? 'ready' : 'not ready'}`,
                ...Object.entries(r)
                  .filter(([k]) => !['provider', 'ready', 'problems'].includes(k))
                  .map(([k, v]) => `  ${k}: ${v ?? '-'}`),
                ...r.problems.map((p) => `  missing: ${p}`),
              ].join('\n'),
            )
            .join('\n\n'),
        );
        if (!doctor && !all.some((r) => r.ready)) ctx.exitCode = 1;
      });
  }

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
      'store an API key for a provider in the durable credential store and point its api_key at keychain:<provider>',
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
    .description('remove a stored credential (the provider then falls back to env vars or config)')
    .argument('<provider>', 'provider id')
    .option('--json', 'print the result as JSON')
    .action(async (provider: string, opts: { json?: boolean }) => {
      const app = await ctx.app();
      const removed = app.providers.store.delete(provider);
      print(ctx, app, opts.json, { provider, removed }, () =>
        removed ? `${provider}: stored credential removed` : `${provider}: nothing was stored`,
      );
    });
};

async function runOAuth(
  app: App,
  ctx: CliContext,
  platform: (typeof OAUTH_PLATFORMS)[number],
  force: boolean,
) {
  const { browserOpener } = await import('../../../providers/oauth/common');
  const io = {
    print: (line: string) => {
      ctx.io.stderr.write(`${line}\n`);
    },
    openUrl: browserOpener(app.env, ctx.io.stderr.isTTY === true),
    signal: ctx.io.signal,
  };
  const common = { store: app.providers.store, fetch: app.fetch, io, now: app.clock.now };
  switch (platform) {
    case 'copilot': {
      const { copilotSettings, loginCopilot } = await import('../../../providers/oauth/copilot');
      return loginCopilot({ ...common, env: app.env, settings: copilotSettings(app.config.auth), force });
    }
    case 'hyper': {
      const { hyperSettings, loginHyper } = await import('../../../providers/oauth/hyper');
      return loginHyper({ ...common, settings: hyperSettings(app.config.auth) });
    }
    case 'openrouter': {
      const { loginOpenRouter, openrouterSettings } = await import('../../../providers/oauth/openrouter');
      return loginOpenRouter({ ...common, settings: openrouterSettings(app.config.auth) });
    }
    case 'chatgpt': {
      const { chatgptSettings, loginChatGpt } = await import('../../../providers/oauth/chatgpt');
      return loginChatGpt({
        dataDir: app.dataDir,
        env: app.env,
        settings: chatgptSettings(app.config.auth),
        fetch: app.fetch,
        io,
        now: app.clock.now,
        force,
      });
    }
    default: {
      const never: never = platform;
      throw new SvcError('invalid_input', `unknown platform ${never}`);
    }
  }
}

/** AUTH-29: OAuth is human-only. Shells the agent runs carry AGENT=svc (or SVC_SESSION_ID). */
function refuseAgents(app: App, platform: string) {
  if (app.env.AGENT === 'svc' || app.env.SVC_SESSION_ID) {
    throw new SvcError(
      'forbidden',
      `svc auth ${platform} is human-only: an agent must not run it. Ask the operator to run \`svc auth ${platform}\` in their own terminal (get_provider_auth_wizard says why).`,
    );
  }
}

/** The key from standard input, stored the one way (providers/credentials.ts storeKey). */
async function storeToken(
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

function tokenText(result: StoredKey): string {
  return [
    `${result.provider}: ${result.kind === 'bearer' ? 'bearer token' : 'API key'} stored (${result.backend} store)`,
    result.sentinel_written
      ? `${result.config_file}: providers.${result.provider}.api_key = "keychain:${result.provider}"`
      : 'no durable store: nothing written to config',
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

function bedrockText(
  r: import('../../../providers/cloud/bedrock').BedrockInspection,
  doctor: boolean,
): string {
  const lines = [
    `${r.provider}: ${r.ready ? 'ready' : 'not ready'}`,
    `  auth_source: ${r.auth_source}${r.auth_source_configured ? '' : ' (unset: auto)'}`,
    `  credential source: ${r.source ? `${r.source} (${r.source_detail})` : 'none'}`,
    `  region: ${r.region ?? 'missing'}${r.region_source ? ` (${r.region_source})` : ''}`,
    `  profile: ${r.profile ?? '-'}${r.profile_source ? ` (${r.profile_source})` : ''}`,
  ];
  if (doctor) {
    lines.push('  sources (auto order):');
    for (const s of r.sources)
      lines.push(
        `    ${s.present ? 'present' : 'absent '} ${`${s.source}:`.padEnd(15)} ${s.detail}${s.note ? ` (${s.note})` : ''}`,
      );
  }
  for (const p of r.problems) lines.push(`  missing: ${p}`);
  return lines.join('\n');
}

/** Everything printed goes through the redactor, whatever the command put together. */
function print(ctx: CliContext, app: App, json: boolean | undefined, value: unknown, text: () => string) {
  if (json) ctx.json(app.redactor.value(value));
  else ctx.out(app.redactor.string(text()));
}

function platformName(platform: (typeof OAUTH_PLATFORMS)[number]): string {
  return {
    copilot: 'GitHub Copilot',
    hyper: 'Charm Hyper',
    openrouter: 'OpenRouter',
    chatgpt: 'ChatGPT (Codex backend)',
  }[platform];
}

function oauthFlow(platform: (typeof OAUTH_PLATFORMS)[number]): string {
  return {
    copilot: 'reuses a GitHub token on disk, else device flow',
    hyper: 'device code, then token exchange',
    openrouter: 'browser PKCE; stores an API key',
    chatgpt: 'inherits the Codex CLI session, else browser PKCE',
  }[platform];
}
