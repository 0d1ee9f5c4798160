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
    /** Its requests' `decide` waits for this first (a window held open). */
    decideAfter?: () => Promise<void>,
  ) {
    const stores = createPostgresPermissionStores({ sql });
    const requests = stores.requests!;
    return createPermissionService({
      config: () => config,
      stores: decideAfter
        ? {
            ...stores,
            requests: {
              ...requests,
              decide: async (id, answer) => {
                await decideAfter();
                return await requests.decide(id, answer);
              },
            },
          }
        : stores,
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

  it('DURABLE-60: an answer on the node resuming the run, begun before its resumed wait starts and deciding the row after: the wait takes it (it was left waiting forever)', async () => {
    const a = node('a');
    let open!: () => void;
    const window = new Promise<void>((resolve) => {
      open = resolve;
    });
    const c = node('c', undefined, () => window);
    // A asks and "dies"; the run is adopted by C (CI, DURABLE-45: the test answers on C as soon
    // as it sees the adoption, while C's resumed run is on its way to the same question).
    void a.ask(request, { sessionId: 's60', runId: 'r60', toolCallId: 'rerun:c1' }).catch(() => {});
    const asked = await waitFor(async () => (await c.listPending('s60'))[0]);
    // The answer starts while C has no waiter of it, and decides the row once C's resumed run,
    // which read the row before that, waits for it.
    const answered = c.answer(asked.request_id, 'allow_once', { by: 'c' });
    const resumed = c.ask(request, { sessionId: 's60', runId: 'r60', toolCallId: 'rerun:c1' });
    await waitFor(async () => (c.pending('s60')[0]?.request_id === asked.request_id ? true : undefined));
    open();
    await expect(answered).resolves.toMatchObject({ request_id: asked.request_id });
    // Within the fallback poll (1 s) and then some: on the base the waiter was dropped from the
    // node's map by the answer's settle, and neither the event, the poll nor the deadline woke it.
    const outcome = await Promise.race([
      resumed,
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000)),
    ]);
    expect(outcome).toBe('operator');
    expect(c.pending('s60')).toEqual([]);
    expect(await c.listPending('s60')).toEqual([]);
    expect(eventsOf(asked.request_id)).toEqual(['permission.requested:', 'permission.resolved:c']);
    // Taken: closed, so a later resume of the run does not wait for it again.
    const row = await sql.one<{ closed_at: unknown }>(
      'SELECT closed_at FROM permission_requests WHERE request_id = $1',
      [asked.request_id],
    );
    expect(row?.closed_at).not.toBeNull();
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
