// Runs ./finish-savepoint.ts (a body's SAVEPOINT + RELEASE inside an open SQLite batch): bundled
// with rolldown (the build's bundler) into bench/results/ first (ignored by git, where
// node_modules resolves), better-sqlite3 left external.
// `node bench/finish-savepoint.mjs`; BENCH_BLOCK, BENCH_BLOCKS: see the .ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
mkdirSync(resolve(here, 'results'), { recursive: true });
const out = join(resolve(here, 'results'), 'finish-savepoint.bundle.mjs');
execFileSync(
  resolve(here, '../node_modules/.bin/rolldown'),
  [
    resolve(here, 'finish-savepoint.ts'),
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
