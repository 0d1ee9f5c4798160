/**
 * `[options.sandbox]` and `[options.shell_env]`: where the commands svc starts run (bash, background
 * jobs, contract/recipe checks, pack hooks) and which environment they get. docs/sandbox.md has
 * the threat model and the defaults.
 *
 * Renamed: `writable_paths` is now `allow_write`; the old key is still read (both are merged).
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

const paths = lazy(() => z.array(z.string().min(1)));

export const sandboxSchema = lazy(() =>
  z
    .strictObject({
      mode: z
        .enum(['auto', 'bwrap', 'off'])
        .default('auto')
        .describe(
          'auto (default): commands run inside bubblewrap where it can run (Linux), else unsandboxed under the parse-based bash rules, said once. bwrap: always sandboxed; when bubblewrap cannot run, commands fail instead of running unsandboxed. off: no OS sandbox.',
        ),
      network: z
        .enum(['none', 'host'])
        .default('none')
        .describe(
          'Network inside the sandbox: none (own empty network namespace, default) or host (shared).',
        ),
      bwrap_path: z
        .string()
        .min(1)
        .optional()
        .describe('The bwrap executable; default: bwrap looked up in PATH.'),
      allow_write: paths()
        .default([])
        .describe(
          'Extra directories commands may write (absolute, ~/…, or relative to the workspace); the workspace and a private /tmp always are. Also lifts a deny_read entry for that directory.',
        ),
      writable_paths: paths().default([]).describe('Old name of allow_write, still read (merged with it).'),
      deny_read: paths()
        .default([])
        .describe(
          'Extra files or directories hidden from commands and refused to every tool, on top of the built-in list (~/.ssh, ~/.gnupg, ~/.aws, ~/.azure, ~/.config/gcloud, ~/.kube, ~/.docker, ~/.netrc, ~/.npmrc, …).',
        ),
      allow_read: paths()
        .default([])
        .describe(
          "Built-in deny_read entries to lift (e.g. ['~/.npmrc']). svc's data directory and credential store can never be lifted.",
        ),
      read_only_git: z
        .boolean()
        .default(false)
        .describe('Bind the workspace .git directory read-only inside the sandbox (commits then fail).'),
    })
    .prefault({}),
);

export const shellEnvSchema = lazy(() =>
  z
    .strictObject({
      include: z
        .array(z.string().min(1))
        .default([])
        .describe(
          'Variables passed to commands on top of the documented allowlist (PATH, HOME, LANG, TERM, …): names or patterns with * (e.g. "JAVA_HOME", "MY_APP_*"). Names that look secret (*_KEY, *_TOKEN, *SECRET*, *PASSWORD*, URLs with credentials, provider credentials) are still dropped: use set for those.',
        ),
      set: z
        .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string())
        .default({})
        .describe(
          'Variables set for every command, exactly as given (e.g. { NODE_ENV = "test", NPM_TOKEN = "${NPM_TOKEN}" } to pass one secret on purpose).',
        ),
    })
    .prefault({}),
);
