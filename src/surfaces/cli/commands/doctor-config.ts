/**
 * `svc doctor`'s config check, and what its other checks read when the config does not load.
 * A broken svc.toml (bad TOML, a wrong type, an unknown store URL) ended doctor with the config
 * error, exit 2, like any command, and nothing else was checked (CLI-FIRST-7): a doctor is what
 * one runs when something is wrong, so the config becomes one failed check naming the file, line
 * and problem, and the checks that need no config (data dir, svc.db, sandbox, Node.js) still run on
 * what loads (the files' valid parts over the defaults, as `svc config validate` reads them).
 * @module
 */
import { resolve } from 'node:path';
import { type ConfigSourcesInput, formatIssue, type LoadedConfig, loadConfig } from '../../../config/load';
import type { Config } from '../../../config/schema';
import { seedSecrets } from '../../../config/secrets';
import { SvcError } from '../../../errors';
import { createRedactor, type Redactor } from '../../../redact';
import { createSandbox, type SandboxStatus } from '../../../sandbox/sandbox';
import type { CliContext } from '../context';

export interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'error';
  detail: string;
}

/** What doctor's checks read of the App: all of it can be had without a valid config. */
export interface DoctorHost {
  dataDir: string;
  config: Pick<Config, 'store'>;
  sandbox: { status(): SandboxStatus };
  redactor: Redactor;
}

/**
 * The App when the config loads (its `config` check ok), else a stand-in over the tolerant load
 * and the failed check. `--store` needs the config to know which store: its error stands.
 */
export async function doctorHost(
  ctx: CliContext,
  options: { store: boolean },
): Promise<{ host: DoctorHost; config: DoctorCheck }> {
  try {
    const app = await ctx.app({ connectStore: false });
    return { host: app, config: configOk(app.loaded) };
  } catch (error) {
    if (!(error instanceof SvcError) || error.code !== 'config_error') throw error;
    const broken = brokenConfigHost(ctx, error);
    // The config error as every command gives it (exit 2), but without a secret it quotes.
    if (options.store) throw new SvcError('config_error', broken.host.redactor.string(error.message));
    return broken;
  }
}

function configOk(loaded: LoadedConfig): DoctorCheck {
  const files = loaded.files.filter((f) => f.found).map((f) => f.path);
  return {
    name: 'config',
    status: 'ok',
    detail: files.length ? `valid: ${files.join(', ')}` : 'no config file: the defaults',
  };
}

function brokenConfigHost(ctx: CliContext, error: SvcError): { host: DoctorHost; config: DoctorCheck } {
  const g = ctx.globals();
  const env = ctx.io.env;
  const workspace = resolve(g.cwd ?? ctx.io.cwd);
  const sources: ConfigSourcesInput = {
    workspace,
    env,
    configFile: g.config,
    overrides: g.c ?? [],
    trust: g.trustWorkspace ? { decision: 'trust' } : {},
  };
  const loaded = loadConfig(sources, { tolerant: true });
  // The values an error quotes may be secrets: scrubbed as `svc config validate` scrubs them.
  const redactor = createRedactor();
  seedSecrets(redactor, loaded, env);
  const [first, ...rest] = loaded.errors;
  // An error found after loading (an allowlist, the engine for the store) is not in `errors`.
  const problem = (first ? formatIssue(first) : error.message).replace(/^config: /, '');
  const more = rest.length ? ` (and ${rest.length} more)` : '';
  const dataDir = resolve(
    workspace,
    g.dataDir ?? (env.SVC_DATA_DIR || undefined) ?? loaded.config.options.data_directory ?? '.svc',
  );
  return {
    host: {
      dataDir,
      config: loaded.config,
      sandbox: createSandbox({ config: () => loaded.config, workspace, dataDir, env }),
      redactor,
    },
    config: {
      name: 'config',
      status: 'error',
      detail: redactor.string(
        `${problem}${more}; every other command refuses to start: fix it (svc config validate lists each problem)`,
      ),
    },
  };
}
