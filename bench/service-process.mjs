// A built `svc service start http` for a benchmark: spawned in a workspace with a private HOME and
// XDG config (never the user's), on a free port, its base URL read from the line it prints once it
// listens. Every bench that serves requests starts its nodes through here.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The environment of a bench's svc process in `ws`: PATH, a HOME and XDG config inside it, `env`,
 * and BENCH_SVC_ENV's `NAME=value` pairs (space-separated: a setting to compare, e.g.
 * `BENCH_SVC_ENV=SVC_GROUP_COMMIT=0`).
 */
export function serviceEnv(ws, env = {}) {
  const extra = (process.env.BENCH_SVC_ENV ?? '')
    .split(' ')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]);
  return {
    PATH: process.env.PATH,
    HOME: join(ws, '.home'),
    XDG_CONFIG_HOME: join(ws, '.home', '.config'),
    ...Object.fromEntries(extra),
    ...env,
  };
}

/**
 * `node <nodeArgs> <bin> service start http --port 0` in `ws`. `url` resolves to the node's base URL
 * (`http://127.0.0.1:<port>`) once it listens and rejects, naming svc's error line, if it exits
 * first; `exited` resolves with its exit code. `onLine` sees each stdout line (traces); stdout is
 * read for the process's whole life so its pipe never fills. `stderr: 'inherit'` shows svc's stderr.
 */
export function startService({ bin, ws, nodeArgs = [], env = {}, stderr = 'pipe', onLine, name = 'svc' }) {
  const child = spawn(process.execPath, [...nodeArgs, bin, 'service', 'start', 'http', '--port', '0'], {
    cwd: ws,
    env: serviceEnv(ws, env),
    stdio: ['ignore', 'pipe', stderr],
  });
  let errors = '';
  child.stderr?.on('data', (d) => {
    errors += d;
  });
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  const url = new Promise((resolveUrl, reject) => {
    let pending = '';
    child.stdout.on('data', (d) => {
      const lines = (pending + d).split('\n');
      pending = lines.pop();
      for (const line of lines) {
        onLine?.(line);
        const match = /svc: listening on (http:\/\/\S+)/.exec(line);
        if (match) resolveUrl(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}${firstErrorLine(errors)}`)));
  });
  return { child, url, exited };
}

/** `: <first line of svc's stderr that is not a Node warning>`, or '' (svc prints its error as one line). */
export function firstErrorLine(stderr) {
  const line = stderr.split('\n').find((l) => l.trim() && !/^\((node:\d+|Use `node)/.test(l));
  return line ? `: ${line}` : '';
}

/** The token a bench's svc serves its HTTP surface with (`[services.http] token`). */
export const BENCH_TOKEN = 'bench-token';

/**
 * Writes `ws/svc.toml` for a bench's compat service: the fake model at `providerUrl` as `fake/m1`
 * (also the small model with `small`), read-only tools on the compat surface, `token`, SSE heartbeats a
 * minute apart, and `extra` TOML before the compat options (e.g. packs).
 */
export function writeCompatConfig(ws, providerUrl, { token = BENCH_TOKEN, small = false, extra = '' } = {}) {
  writeFileSync(
    join(ws, 'svc.toml'),
    `[providers.fake]\ntype = "openai-compat"\nbase_url = "${providerUrl}"\n[models]\nlarge = "fake/m1"\n` +
      `${small ? 'small = "fake/m1"\n' : ''}${extra}[options.openai_compat]\ntool_policy = "read_only"\n` +
      `[services.http]\ntoken = "${token}"\nsse_heartbeat_seconds = 60\n`,
  );
}
