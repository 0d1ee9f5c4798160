// A bench written in TypeScript (it imports svc's sources) run the way svc is built: bundled with
// rolldown (the build's bundler) into bench/results/ (ignored by git, where node_modules
// resolves), better-sqlite3 left external, then imported. Used by the .mjs next to each such .ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;

/** Bundles `bench/<name>.ts` and runs it. */
export async function runBundled(name) {
  mkdirSync(resolve(here, 'results'), { recursive: true });
  const out = join(resolve(here, 'results'), `${name}.bundle.mjs`);
  execFileSync(
    resolve(here, '../node_modules/.bin/rolldown'),
    [
      resolve(here, `${name}.ts`),
      '--file',
      out,
      '--format',
      'esm',
      '--platform',
      'node',
      '--external',
      'better-sqlite3',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await import(out);
}
