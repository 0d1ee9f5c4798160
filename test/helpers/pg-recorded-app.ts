/**
 * A test App on a fresh migrated PostgreSQL database whose statements are recorded as they are
 * sent: the frame of the store tests that count an append's statements
 * (test/store/pg-step-phase.test.ts, pg-tool-finished.test.ts); and an agent App on such a
 * database driven by a scripted model (pg-step-phase, pg-model-call-step-end).
 */
import { agentApp, echoTool } from './agent-harness';
import { makeTestApp } from './make-test-app';
import { migratedDatabase, type PostgresCluster, recordingClient } from './postgres';

/** The App and its database, its statements' texts in `sent`; `closers` gets their closes. */
export async function recordedApp(
  cluster: PostgresCluster,
  sent: string[],
  closers: (() => Promise<void>)[],
) {
  const sql = await migratedDatabase(cluster);
  const app = await makeTestApp({ postgres: recordingClient(sql, sent) });
  closers.push(async () => {
    await app.close();
    await sql.close();
  });
  return { app, sql };
}

/** An agent App with the echo tool on a fresh migrated database, its model scripted; `closers` gets their closes. */
export async function pgAgentApp(
  cluster: PostgresCluster,
  script: Parameters<typeof agentApp>[0],
  closers: (() => Promise<void>)[],
) {
  const sql = await migratedDatabase(cluster);
  const { app } = await agentApp(script, { extraTools: [echoTool], postgres: sql });
  closers.push(async () => {
    await app.close();
    await sql.close();
  });
  return { app, sql };
}
