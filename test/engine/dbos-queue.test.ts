/**
 * The durable engine's run queue against DBOS on a throwaway PostgreSQL (src/engine/dbos-queue.ts,
 * docs/engine.md "The run queue"): ENGINE-15, enqueueing a run whose workflow already ended (its
 * node was stopping and did not start it; the run is still queued) puts the same workflow back
 * onto the queue in its workspace's partition, and it runs again. One DBOS per process: this file
 * is its own.
 */
import { expect, it } from 'vitest';
import { createRunQueue } from '../../src/engine/dbos-queue';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile({ durable: true });

it.skipIf(!pg.available)(
  'ENGINE-15: a queued run whose workflow ended is enqueued again: the same workflow runs again on its partition',
  async () => {
    const url = await pg.cluster().createDatabase('run_queue');
    const { DBOS } = await import('@dbos-inc/dbos-sdk');
    let runs = 0;
    const workflow = DBOS.registerWorkflow(
      async (id: string) =>
        DBOS.runStep(
          async () => {
            runs++;
            return id;
          },
          { name: 'run' },
        ),
      { name: 'svc.run' },
    );
    DBOS.setConfig({ name: 'svc', systemDatabaseUrl: url, executorID: 'node-1', applicationVersion: 'test' });
    await DBOS.launch();
    try {
      const queue = createRunQueue(DBOS, workflow, { queue_poll_ms: 100 });
      await queue.register();
      await (await queue.enqueue('run_1', '/tmp')).done;
      expect(runs).toBe(1);
      await (await queue.enqueue('run_1', '/tmp')).done;
      expect(runs).toBe(2);
      const status = await DBOS.getWorkflowStatus('run_1');
      expect(status).toMatchObject({ status: 'SUCCESS', queueName: 'svc_runs', queuePartitionKey: '/tmp' });
    } finally {
      await DBOS.shutdown();
    }
  },
  60_000,
);
