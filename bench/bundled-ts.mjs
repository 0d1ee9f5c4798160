// A bench written in TypeScript (it imports svc's sources) run the way svc is built: bundled with
// rolldown (the build's bundler) for Node, its native drivers left external. `runBundled` for a
// bench/<name>.ts (the .mjs next to it calls it), `bundleForNode` for any entry (./tree-drivers.mjs).
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;

/**
 * Bundles `entry` into the ES module `out`, `external` left to node_modules, `args` passed to
 * rolldown as they are; throws with rolldown's output when it fails, naming `label`.
 */
export function bundleForNode(entry, out, { external = ['better-sqlite3'], args = [], label = entry } = {}) {
  const built = spawnSync(
    resolve(here, '../node_modules/.bin/rolldown'),
    [
      entry,
      '--file',
      out,
      '--format',
      'esm',
      '--platform',
      'node',
      ...external.flatMap((e) => ['-e', e]),
      ...args,
    ],
    { encoding: 'utf8' },
  );
  if (built.status !== 0) throw new Error(`bundling ${label} failed: ${built.stderr || built.stdout}`);
}

/** Bundles `bench/<name>.ts` into bench/results/ (ignored by git, where node_modules resolves) and runs it. */
export async function runBundled(name) {
  mkdirSync(resolve(here, 'results'), { recursive: true });
  const out = join(resolve(here, 'results'), `${name}.bundle.mjs`);
  bundleForNode(resolve(here, `${name}.ts`), out);
  await import(out);
}
