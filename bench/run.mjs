#!/usr/bin/env node
// Benchmarks (not tests): `npm run bench`. Each bench file exports `run()` returning rows; this
// runner prints them and a JSON summary to bench/results/latest.json. Targets are reported, not
// asserted: timing belongs here, never in timed tests.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv[2];
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs') && (!only || f.includes(only)))
  .sort();
const results = {};
for (const file of files) {
  const mod = await import(pathToFileURL(join(here, file)).href);
  process.stdout.write(`\n## ${file}\n`);
  const rows = await mod.run();
  results[file] = rows;
  for (const row of rows) {
    const verdict =
      row.target === undefined ? '' : row.pass ? `  ✓ target ${row.target}` : `  ✗ target ${row.target}`;
    process.stdout.write(`${row.name.padEnd(48)} ${row.value}${verdict}\n`);
  }
}
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(
  join(here, 'results', 'latest.json'),
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2)}\n`,
);
