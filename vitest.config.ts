import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

/**
 * Test files run in parallel, two a core (at least 2, at most 6). Vitest's default is one fewer
 * than the cores, which on a 2-core CI box is one file at a time; yet most of the suite's time is
 * waiting (language servers, PostgreSQL clusters, child `svc` processes, provider timeouts), not
 * CPU. `--maxWorkers=<n>` overrides it. docs/development.md "Test suite time".
 */
const workers = Math.max(2, Math.min(2 * availableParallelism(), 6));

export default defineConfig({
  define: { __SVC_VERSION__: JSON.stringify(version) },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
    maxWorkers: workers,
    env: { SVC_TEST: '1' },
  },
});
