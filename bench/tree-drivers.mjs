// The harness of the in-process benches that compare source trees (./bus-append.mjs,
// ./bus-publish-context.mjs): for each tree a driver (TypeScript over that tree's `src/`) is bundled
// with rolldown, then the bundles run in turn, `rounds` times, each printing one JSON line last.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from './bundled-ts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = dirname(here);

/** BENCH_TREES (comma-separated source trees), default this checkout. */
export const benchTrees = () => (process.env.BENCH_TREES ?? repo).split(',').filter(Boolean);

/**
 * Each tree's results, one per round: `driver(tree)` is the driver's source; `check(result, tree)`
 * may throw to refuse a result; `bundleArgs` go to rolldown as they are (e.g. a driver whose
 * imports reach a dynamic `import()` needs `--inline-dynamic-imports`). The bundles live in a scratch folder under bench/, removed after.
 */
export function runTreeDrivers({ name, trees, rounds, driver, check = () => {}, bundleArgs = [] }) {
  const work = join(here, `.${name}-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    const bundles = trees.map((tree, i) => {
      const entry = join(work, `driver-${i}.ts`);
      const out = join(work, `driver-${i}.mjs`);
      writeFileSync(entry, driver(tree));
      bundleForNode(entry, out, { external: ['better-sqlite3', 'pg'], args: bundleArgs, label: tree });
      return out;
    });
    const results = trees.map(() => []);
    for (let round = 0; round < rounds; round++) {
      bundles.forEach((bundle, i) => {
        const ran = spawnSync(process.execPath, [bundle], { encoding: 'utf8' });
        if (ran.status !== 0) throw new Error(`${trees[i]}: ${ran.stderr}`);
        const result = JSON.parse(ran.stdout.trim().split('\n').at(-1));
        check(result, trees[i]);
        results[i].push(result);
      });
    }
    return results;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** `median (min–max)` of one key over a tree's results. */
export function showMedian(list, key) {
  const values = list.map((r) => r[key]).sort((a, b) => a - b);
  return `${values[values.length >> 1].toFixed(1)} (${values[0].toFixed(1)}–${values.at(-1).toFixed(1)})`;
}
