/**
 * The daemons' storage contract (issue 18): what every backend's `service_processes` answers, run
 * on SQLite and on PostgreSQL by ./daemons.contract.test.ts. Pins: a row round-trips (nulls kept,
 * argv, status and identity the JSON as written, no extra columns), a missing id is undefined, the list is
 * newest first (write order among equal start times), running ones only unless asked, up to the
 * limit; a heartbeat moves heartbeat_at and status; a stopped row keeps its first stop.
 */
import { expect, it } from 'vitest';
import type { DaemonRecord, DaemonRepository } from '../../../src/scheduler/daemon-repository';

export interface DaemonsFixture {
  rows: DaemonRepository;
  close(): Promise<void>;
}

export type OpenDaemonRepository = () => Promise<DaemonsFixture>;

type NewDaemon = Parameters<DaemonRepository['insert']>[0];

const daemon = (id: string, patch: Partial<NewDaemon> = {}): NewDaemon => ({
  id,
  kind: 'http',
  pid: 4242,
  host: 'node-a',
  url: 'http://127.0.0.1:7000',
  argv: '["service","start","http"]',
  worker: null,
  started_at: 1_000,
  heartbeat_at: 1_000,
  status: '{"cwd":"/w"}',
  identity: '{"start_time":123,"boot_id":"b-1"}',
  ...patch,
});

export function daemonsContract(open: OpenDaemonRepository): void {
  const withRows = (fn: (rows: DaemonRepository) => Promise<void>) => async () => {
    const f = await open();
    try {
      await fn(f.rows);
    } finally {
      await f.close();
    }
  };

  it(
    'STORE-PG-daemons: a row round-trips with its nulls and JSON as written; a missing id is undefined',
    withRows(async (rows) => {
      await rows.insert(daemon('dmn_1', { url: null, worker: 'autopilot', kind: 'autopilot', pid: 2 ** 40 }));
      const expected: DaemonRecord = {
        ...daemon('dmn_1', { url: null, worker: 'autopilot', kind: 'autopilot', pid: 2 ** 40 }),
        stopped_at: null,
        stop_reason: null,
      };
      expect(await rows.get('dmn_1')).toEqual(expected);
      // A row without an identity (as older rows are) keeps its null.
      await rows.insert(daemon('dmn_old', { identity: null }));
      expect((await rows.get('dmn_old'))?.identity).toBeNull();
      expect(await rows.get('dmn_none')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-daemons: the list is newest first, write order among equal starts, running only unless asked, up to the limit',
    withRows(async (rows) => {
      await rows.insert(daemon('dmn_b', { started_at: 2_000 }));
      await rows.insert(daemon('dmn_a', { started_at: 3_000 }));
      await rows.insert(daemon('dmn_c', { started_at: 2_000 }));
      await rows.insert(daemon('dmn_d', { started_at: 1_000 }));
      await rows.stopped('dmn_a', 4_000, 'signal');
      const ids = (list: DaemonRecord[]) => list.map((r) => r.id);
      expect(ids(await rows.list({ includeStopped: false, limit: 20 }))).toEqual(['dmn_c', 'dmn_b', 'dmn_d']);
      expect(ids(await rows.list({ includeStopped: true, limit: 20 }))).toEqual([
        'dmn_a',
        'dmn_c',
        'dmn_b',
        'dmn_d',
      ]);
      expect(ids(await rows.list({ includeStopped: true, limit: 2 }))).toEqual(['dmn_a', 'dmn_c']);
      expect(Object.keys((await rows.list({ includeStopped: true, limit: 1 }))[0]!).sort()).toEqual(
        Object.keys({ ...daemon('x'), stopped_at: null, stop_reason: null }).sort(),
      );
    }),
  );

  it(
    'STORE-PG-daemons: a heartbeat moves heartbeat_at and status; a stopped row keeps its first stop',
    withRows(async (rows) => {
      await rows.insert(daemon('dmn_1'));
      await rows.heartbeat('dmn_1', 5_000, '{"cwd":"/w","open_streams":2}');
      expect(await rows.get('dmn_1')).toMatchObject({
        heartbeat_at: 5_000,
        status: '{"cwd":"/w","open_streams":2}',
        stopped_at: null,
      });
      await rows.stopped('dmn_1', 6_000, 'SIGTERM');
      await rows.stopped('dmn_1', 7_000, 'again');
      expect(await rows.get('dmn_1')).toMatchObject({ stopped_at: 6_000, stop_reason: 'SIGTERM' });
      await rows.heartbeat('dmn_none', 8_000, '{}');
      await rows.stopped('dmn_none', 8_000, 'x');
      expect(await rows.get('dmn_none')).toBeUndefined();
    }),
  );
}
