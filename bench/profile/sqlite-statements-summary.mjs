// Summary of ./sqlite-statements.cjs's file: statements and SQLite time per request, by text.
// `node bench/profile/sqlite-statements-summary.mjs <file> <requests> [top]`
import { readFileSync } from 'node:fs';

const [file, requestsArg, topArg] = process.argv.slice(2);
const requests = Number(requestsArg);
const rows = JSON.parse(readFileSync(file, 'utf8')).sort((a, b) => b[1].ns - a[1].ns);
// `stack: …` rows (SVC_COUNT_STACKS) repeat statements already counted: not in the totals.
const statements = rows.filter(([text]) => !text.startsWith('stack: '));
const calls = statements.reduce((n, [, s]) => n + s.n, 0);
const ns = statements.reduce((n, [, s]) => n + s.ns, 0);
console.log(
  `${(calls / requests).toFixed(1)} statements and ${(ns / requests / 1e6).toFixed(3)} ms of SQLite per request`,
);
for (const [text, s] of rows.slice(0, Number(topArg ?? 25)))
  console.log(
    `${(s.n / requests).toFixed(2).padStart(6)} x ${(s.ns / requests / 1e3).toFixed(1).padStart(6)} µs/request ${(s.ns / s.n / 1e3).toFixed(1).padStart(7)} µs each  ${text.slice(0, 120)}`,
  );
