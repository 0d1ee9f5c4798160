/**
 * Stored permission requests (issue 19, item 4; src/permissions/permission-durable.ts) on a real
 * PostgreSQL: two permission services ("nodes") on one database, each with its own bus (so the
 * holder learns of another node's answer from the row, the fallback poll). Pins: a request asked
 * on A is listed and answered on B, A's wait ends with it, a late answer is not_found; the stored
 * deadline ends a wait as a deny (`by: "timeout"`); a run resumed on another node asks again for
 * the same call and gets the same request: the answer given while no node held it, or a wait for
 * it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Config, configSchema } from '../../src/config/schema';
import { SvcError } from '../../src/errors';
import { createEventBus } from '../../src/events/bus';
import { createPermissionService } from '../../src/permissions/permission-service';
import { createPostgresPermissionStores } from '../../src/permissions/stores';
import type { SqlClient } from '../../src/store/postgres/client';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('stored permission requests on PostgreSQL', () => {
  let sql: SqlClient;
  const ledger: { runId: string; type: string; payload: Record<string, unknown> }[] = [];
  let counter = 0;
  beforeAll(async () => {
    sql = await migratedDatabase(pg.cluster());
  }, 60_000);
  afterAll(async () => {
    await sql?.close();
  });

  function node(
    name: string,
    config: Config = configSchema().parse({ permissions: { unattended: 'wait' } }),
  ) {
    return createPermissionService({
      config: () => config,
      stores: createPostgresPermissionStores({ sql }),
      bus: createEventBus({ clock: { now: () => Date.now() } }),
      clock: { now: () => Date.now() },
      ids: { next: (prefix: string) => `${prefix}_${name}_${++counter}_${Date.now()}` },
      sessions: { root: async (id: string) => id },
      runs: {
        append: async (runId, type, payload = {}) => {
          ledger.push({ runId, type, payload });
        },
        get: async () => ({ status: 'running' as const }),
      },
    });
  }
  const request = { tool: 'bash', title: 'bash: echo hi >> a.log', scope: 'echo' };
  const eventsOf = (requestId: string) =>
    ledger.filter((e) => e.payload.request_id === requestId).map((e) => `${e.type}:${e.payload.by ?? ''}`);

  it('DURABLE-23: asked on A, listed and answered on B; A goes on; a late answer on either is not_found', async () => {
    const a = node('a');
    const b = node('b');
    const asked = a.ask(request, { sessionId: 's23', runId: 'r23', toolCallId: 'c1' });
    const listed = await waitFor(async () => (await b.listPending('s23'))[0]);
    expect(listed).toMatchObject({ run_id: 'r23', tool_call_id: 'c1', tool: 'bash' });
    expect(b.pending('s23')).toEqual([]); // not B's own waiter
    await b.answer(listed.request_id, 'allow_once', { by: 'b' });
    await expect(asked).resolves.toBe('operator');
    for (const n of [a, b])
      await expect(n.answer(listed.request_id, 'deny')).rejects.toMatchObject({ code: 'not_found' });
    expect(await a.listPending('s23')).toEqual([]);
    expect(eventsOf(listed.request_id)).toEqual(['permission.requested:', 'permission.resolved:b']);
  }, 30_000);

  it('DURABLE-24: the stored deadline ends the wait as a deny by "timeout"', async () => {
    const a = node('a', configSchema().parse({ permissions: { unattended: 'wait', wait_timeout_s: 0.3 } }));
    const error = await a.ask(request, { sessionId: 's24', runId: 'r24', toolCallId: 'c1' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(SvcError.is(error) && error.code).toBe('forbidden');
    expect(String((error as Error).message)).toContain('timed out');
    const id = ledger.find((e) => e.runId === 'r24')!.payload.request_id as string;
    expect(eventsOf(id)).toEqual(['permission.requested:', 'permission.resolved:timeout']);
    await expect(a.answer(id, 'allow_once')).rejects.toMatchObject({ code: 'not_found' });
  }, 30_000);

  it('DURABLE-25: a resumed run asks again for the same call: the answer given meanwhile, or a wait for the same request', async () => {
    const a = node('a');
    const b = node('b');
    const c = node('c');
    // A asks and "dies" (its wait is abandoned: nothing settles it but the row).
    void a.ask(request, { sessionId: 's25', runId: 'r25', toolCallId: 'c1' }).catch(() => {});
    const first = await waitFor(async () => (await b.listPending('s25'))[0]);
    await b.answer(first.request_id, 'allow_once', { by: 'b' });
    await expect(c.ask(request, { sessionId: 's25', runId: 'r25', toolCallId: 'c1' })).resolves.toBe(
      'operator',
    );
    expect(eventsOf(first.request_id)).toEqual(['permission.requested:', 'permission.resolved:b']);

    // Another call waits on A; C resumes the run: it waits for the same request; B denies it.
    void a.ask(request, { sessionId: 's25', runId: 'r25', toolCallId: 'c2' }).catch(() => {});
    const second = await waitFor(async () => (await b.listPending('s25'))[0]);
    const resumed = c.ask(request, { sessionId: 's25', runId: 'r25', toolCallId: 'c2' });
    await waitFor(async () => (c.pending('s25')[0]?.request_id === second.request_id ? true : undefined));
    await b.answer(second.request_id, 'deny', { by: 'b', message: 'not this one' });
    await expect(resumed).rejects.toMatchObject({ code: 'forbidden' });
    await expect(resumed).rejects.toThrow(/not this one/);
    expect(eventsOf(second.request_id)).toEqual(['permission.requested:', 'permission.resolved:b']);
  }, 30_000);
});

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
