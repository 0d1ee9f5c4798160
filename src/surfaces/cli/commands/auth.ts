/**
 * `svc auth …`: the human-only credential bootstrap and checks (spec, Authentication).
 *   svc auth copilot | hyper | openrouter | chatgpt   OAuth sign-in (interactive)
 *   svc auth claude | codex | gemini                  vendor CLI setup check (stores nothing)
 *   svc auth bedrock [provider] | doctor | token <provider> --token-stdin
 *   svc auth vertex [doctor], svc auth azure [doctor] cloud identity checks
 *   svc auth summary                                  redacted credential mode of the large model
 *   svc auth token <provider> --token-stdin           store an API key (writes keychain:<provider>)
 *   svc auth logout <provider>                        forget a stored credential
 * Prompts (codes, URLs) go to stderr; the result goes to stdout (JSON with --json). The cloud
 * identity checks are in auth-cloud.ts; summary, token and logout in auth-credentials.ts.
 * @module
 */
import type { Command } from 'commander';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import type { CliContext, CliRegistrar } from '../context';
import { ensureCommand } from '../tool-commands';
import { registerCloudIdentityCommands } from './auth-cloud';
import { print, registerCredentialCommands } from './auth-credentials';

const OAUTH_PLATFORMS = ['copilot', 'hyper', 'openrouter', 'chatgpt'] as const;
const CLI_PLATFORMS = ['claude', 'codex', 'gemini'] as const;

export const registerAuthCommands: CliRegistrar = (program, ctx) => {
  const auth = ensureCommand(
    program,
    ['auth'],
    'provider sign-in and credential checks (human-only OAuth bootstrap)',
  );
  registerOAuthSignIns(auth, ctx);
  registerVendorCliChecks(auth, ctx);
  registerCloudIdentityCommands(auth, ctx);
  registerCredentialCommands(auth, ctx);
};

/** `svc auth copilot | hyper | openrouter | chatgpt`: interactive OAuth sign-in. */
function registerOAuthSignIns(auth: Command, ctx: CliContext): void {
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
}

/** `svc auth claude | codex | gemini`: the vendor CLI is installed and logged in (stores nothing). */
function registerVendorCliChecks(auth: Command, ctx: CliContext): void {
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
}

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
