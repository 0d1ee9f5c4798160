// Runs ./search-index-step.ts (the message search index's cost to a step's writes, SQLite): bundled
// with rolldown (the build's bundler) into bench/results/ first (ignored by git, where
// node_modules resolves), better-sqlite3 left external.
// `node bench/search-index-step.mjs`; BENCH_BLOCK, BENCH_BLOCKS, BENCH_CATCH_UP_EVERY: see the .ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
mkdirSync(resolve(here, 'results'), { recursive: true });
const out = join(resolve(here, 'results'), 'search-index-step.bundle.mjs');
execFileSync(
  resolve(here, '../node_modules/.bin/rolldown'),
  [
    resolve(here, 'search-index-step.ts'),
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
