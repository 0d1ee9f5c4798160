/**
 * Once per vitest run, in the main process: a directory the workers share for what is costly to
 * make and the same for every file (the initdb'd PostgreSQL data directory, test/helpers/postgres.ts),
 * removed when the run ends. Nothing is made here: a run with no PostgreSQL file pays nothing.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A directory shared by this run's workers (see test/helpers/global-setup.ts). */
    svcRunCache: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-run-'));
  project.provide('svcRunCache', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
