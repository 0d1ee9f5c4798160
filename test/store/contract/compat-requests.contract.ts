/**
 * The compat request ledger's contract (issue 18): `openai_compat_requests` on every backend, run
 * on SQLite and PostgreSQL by ./compat-requests.contract.test.ts. Pins: a row round-trips with its
 * booleans and ignored fields; `finish` records the outcome; `list` is newest first with ties in
 * insertion order, limited, with the count of every row; a missing request is undefined.
 */
import { expect, it } from 'vitest';
import type { CompatRequestRepository, CompatRequestRow } from '../../../src/runs/compat-request-repository';
import { compatRequestRow } from '../../helpers/compat-request-row';
import { withOpened } from './fixture';

export interface OpenedCompatRequests {
  requests: CompatRequestRepository;
  /** Adds a session `s1` and queued runs of it. */
  addRuns(ids: string[]): Promise<void>;
  close(): Promise<void>;
}

const row = (id: string, at: number, extra: Partial<CompatRequestRow> = {}) =>
  compatRequestRow(
    { request_id: id, run_id: 'r1', session_id: 's1' },
    {
      requested_model: 'gpt-4o',
      model_source: 'alias',
      ignored_fields: ['temperature', 'tools'],
      created_at: at,
      ...extra,
    },
  );

export function compatRequestsContract(open: () => Promise<OpenedCompatRequests>): void {
  const withRequests = withOpened(open, (o) => o);

  it(
    'STORE-PG-compat: a request round-trips with its booleans and ignored fields; finish records the outcome',
    withRequests(async ({ requests, addRuns }) => {
      await addRuns(['r1']);
      await requests.insert(row('chatcmpl-1', 1000));
      expect(await requests.get('chatcmpl-1')).toEqual({ ...row('chatcmpl-1', 1000), finished_at: null });
      await requests.finish('chatcmpl-1', {
        status: 'completed',
        finish_reason: 'stop',
        http_status: 200,
        error: null,
        prompt_tokens: 12,
        completion_tokens: 5,
        finished_at: 1500,
      });
      expect(await requests.get('chatcmpl-1')).toMatchObject({
        status: 'completed',
        finish_reason: 'stop',
        http_status: 200,
        prompt_tokens: 12,
        completion_tokens: 5,
        finished_at: 1500,
        stream: true,
        include_usage: false,
        ignored_fields: ['temperature', 'tools'],
      });
      expect(await requests.get('chatcmpl-missing')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-compat: list is newest first, ties in insertion order (newest first), limited, with the total',
    withRequests(async ({ requests, addRuns }) => {
      await addRuns(['r1']);
      await requests.insert(row('a', 1000));
      await requests.insert(row('b', 2000, { stream: false, include_usage: true, ignored_fields: [] }));
      await requests.insert(row('c', 2000));
      await requests.insert(row('d', 500));
      const all = await requests.list({ limit: 10 });
      expect(all.total).toBe(4);
      expect(all.rows.map((r) => r.request_id)).toEqual(['c', 'b', 'a', 'd']);
      expect(all.rows[1]).toMatchObject({ stream: false, include_usage: true, ignored_fields: [] });
      const two = await requests.list({ limit: 2 });
      expect(two).toMatchObject({ total: 4 });
      expect(two.rows.map((r) => r.request_id)).toEqual(['c', 'b']);
      expect(await requests.list({ limit: 5 }).then((l) => l.rows.length)).toBe(4);
    }),
  );
}
