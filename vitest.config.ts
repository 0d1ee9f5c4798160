import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

/**
 * Test files run in parallel, two a core (at least 2, at most 6). Vitest's default is one fewer
 * than the cores, which on a 2-core CI box is one file at a time; yet most of the suite's time is
 * waiting (language servers, PostgreSQL clusters, child `svc` processes, provider timeouts), not
 * CPU. `--maxWorkers=<n>` overrides it. docs/development.md "Test suite time".
 */
const workers = Math.max(2, Math.min(2 * availableParallelism(), 6));

const include = ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts', 'test/**/*.test.tsx'];

/**
 * The files that run in a fresh process each ("isolated"); every other file shares its worker's
 * module graph with the files that worker ran before ("shared", `isolate: false`). Importing and
 * evaluating svc's ≈ 700 modules again for each file was the suite's largest cost (≈ 3 s of CPU a
 * file that builds an App, 814 s summed). A file is isolated when it changes what the next file of
 * its worker would see: process.env, globals or fake timers, a `vi.spyOn` on a module's export,
 * or a process-wide switch of svc (below). docs/development.md "Test suite time".
 */
const isolatedPaths = [
  // DBOS is one per process, and these files start, crash and recover it.
  'test/cluster/**',
  'test/engine/**',
  // They set or delete process.env entries, or replace globals.
  'src/providers/http-transport.test.ts',
  'src/store/checkpointer.test.ts',
  'src/store/idle-checkpoint.test.ts',
  // Counts promises made with Node 20's promise hooks on: a file before it in a shared worker that
  // left hooks on (an open scope) made COMPAT-PERF-251 count 83,720 (CI, c065ca1).
  'src/store/tx-token.test.ts',
  'src/surfaces/tui/production-react.test.ts',
  'test/call-path.test.ts',
  'test/parity.test.ts',
  'test/tui/clients.test.ts',
  // Fake timers.
  'src/surfaces/tui/state/run-end.test.ts',
  // It waits for the process to go quiet (its own CPU time): an earlier file's leftovers in a
  // shared worker (timers, sockets, background catch-ups) kept it busy in a full run.
  'src/util/heap.test.ts',
  // Sets V8's semi-space growth factor for the process, and measures the young generation from
  // the size it has at the start: in a shared worker an earlier file had left it at 2 MB, a cap
  // of 1 MB a semi-space, and the growth the GC observer hears of late went past the bound
  // (COMPAT-PERF-459 on Node 20, then with smaller turns on Node 24, in CI).
  'src/util/heap-young-cap.test.ts',
  // vi.spyOn on module exports and objects that outlive the file.
  'src/agent/step-recorder.test.ts',
  'src/providers/prompt-messages.test.ts',
  'test/agent/history-reads.test.ts',
  'test/agent/queue-published.test.ts',
  'test/agent/run-result-shared.test.ts',
  'test/e2e/run-busy-race.test.ts',
  'test/http/session-events.test.ts',
  'test/http/sse-turns.test.ts',
  'test/observe/codebase-section.test.ts',
  'test/observe/engine-reads.test.ts',
  'test/providers/warnings.test.ts',
  'test/readouts/engine-reads.test.ts',
  'test/readouts/recommendation-reads.test.ts',
  'test/store/run-row-shape.test.ts',
  'test/telemetry/metrics-route.test.ts',
  // vi.mock of node:fs (a stat that calls a FIFO a regular file, test/helpers/fifo-swap.ts): in a
  // shared worker svc's modules were already evaluated with the real node:fs.
  'test/packs/fifo-swap.test.ts',
  'test/workflow/fifo-swap.test.ts',
];

/**
 * Process-wide switches of svc that stay on for every later App of the process: an in-process
 * HTTP server turns group commit on (src/store/db.ts `enableGroupCommit`; ENGINE-COMPAT-2 failed
 * after such a file), a PostgreSQL session store turns read scopes on (src/store/read-scope.ts
 * `enableReadScopes`). A file whose text reaches either (itself or through these helpers) is
 * isolated, as are the PostgreSQL files (their clusters are per file anyway).
 */
const switchesOn =
  /surfaces\/http\/server'|compat-helpers'|helpers\/postgres'|ledger-nodes'|pg-session-store'|enableGroupCommit|enableReadScopes/;

const testFiles = ['src', 'test'].flatMap((root) =>
  readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.test\.tsx?$/.test(name))
    .map((name) => join(root, name)),
);
const isolatedFiles = [
  ...isolatedPaths.map((entry) => (entry.endsWith('/**') ? `${entry}/*.test.{ts,tsx}` : entry)),
  ...testFiles.filter((file) => switchesOn.test(readFileSync(file, 'utf8'))),
];

export default defineConfig({
  define: { __SVC_VERSION__: JSON.stringify(version) },
  test: {
    // A bound for a test that hangs, not a speed target (those are benchmarks under bench/): tests
    // that start several svc processes take 20–28 s on a loaded 2-core CI box (stop 55's CI log)
    // and one timed out at 30 s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
    maxWorkers: workers,
    // SVC_TX_CHECK: a nested call inside a token body not given its token throws instead of
    // waiting for the body (src/store/tx-check.ts); the scope-counting tests turn it off.
    env: { SVC_TEST: '1', SVC_TX_CHECK: '1' },
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include,
          exclude: isolatedFiles,
          isolate: false,
          // Fails a file that leaves process state behind for the next one (test/helpers/shared-file-guard.ts).
          setupFiles: ['test/helpers/shared-file-guard.ts'],
        },
      },
      { extends: true, test: { name: 'isolated', include: isolatedFiles, isolate: true } },
    ],
  },
});
