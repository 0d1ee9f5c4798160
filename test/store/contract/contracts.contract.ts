/**
 * The contracts repository's contract (issue 18): what every backend's `contract_obligations`,
 * `contract_results` and `contract_waivers` answer, run on SQLite and on PostgreSQL by
 * ./contracts.contract.test.ts. Pins: attached obligations per scope in id order, replaced on
 * re-attach; the last result is the newest inserted (nulls kept), per scope and obligation, and
 * by command across scopes; a missing result or waiver is undefined; a waiver is replaced.
 */
import { expect, it } from 'vitest';
import type { ContractRepository } from '../../../src/contracts/contract-repository';
import { withOpened } from './fixture';

export type OpenContractRepository = () => Promise<{ store: ContractRepository; close: () => Promise<void> }>;

export function contractRepositoryContract(open: OpenContractRepository): void {
  const withStore = withOpened(open, (f) => f.store);

  it(
    'STORE-PG-contracts: attached obligations per scope in id order, re-attach replaces the spec',
    withStore(async (store) => {
      expect(await store.attached('s1')).toEqual([]);
      await store.attach('s1', 'lint', '{"kind":"command","command":"npm run lint"}', 100);
      await store.attach('s1', 'B-tests', '{"kind":"file_exists","path":"a"}', 101);
      await store.attach('s1', 'a.docs', '{"kind":"no_markers"}', 102);
      await store.attach('s2', 'other', '{}', 103);
      await store.attach('s1', 'lint', '{"kind":"command","command":"npm test"}', 104);
      expect(await store.attached('s1')).toEqual([
        { obligation_id: 'B-tests', spec: '{"kind":"file_exists","path":"a"}' },
        { obligation_id: 'a.docs', spec: '{"kind":"no_markers"}' },
        { obligation_id: 'lint', spec: '{"kind":"command","command":"npm test"}' },
      ]);
      expect(await store.attached('s2')).toEqual([{ obligation_id: 'other', spec: '{}' }]);
    }),
  );

  it(
    'STORE-PG-contracts: the last result is the newest per scope and obligation, and per command across scopes',
    withStore(async (store) => {
      expect(await store.lastResult('', 'lint')).toBeUndefined();
      expect(await store.latestForCommand('npm run lint')).toBeUndefined();
      const base = { origin: 'workspace', kind: 'command', obligation_id: 'lint' };
      await store.insertResult({
        ...base,
        scope: '',
        command: 'npm run lint',
        status: 'failed',
        detail: 'boom',
        exit_code: 1,
        duration_ms: 1500,
        ran_at: 300,
      });
      await store.insertResult({
        ...base,
        scope: '',
        command: 'npm run lint',
        status: 'passed',
        detail: '',
        exit_code: 0,
        duration_ms: 20,
        ran_at: 200,
      });
      await store.insertResult({
        ...base,
        scope: 's1',
        obligation_id: 'plan',
        kind: 'plan_approved',
        command: null,
        status: 'failed',
        detail: 'no plan',
        exit_code: null,
        duration_ms: null,
        ran_at: 250,
      });
      expect(await store.lastResult('', 'lint')).toEqual({
        status: 'passed',
        detail: '',
        exit_code: 0,
        duration_ms: 20,
        ran_at: 200,
        scope: '',
      });
      expect(await store.lastResult('s1', 'plan')).toEqual({
        status: 'failed',
        detail: 'no plan',
        exit_code: null,
        duration_ms: null,
        ran_at: 250,
        scope: 's1',
      });
      expect(await store.lastResult('s1', 'lint')).toBeUndefined();
      await store.insertResult({
        ...base,
        scope: 's2',
        obligation_id: 'gate',
        command: 'npm run lint',
        status: 'failed',
        detail: 'x',
        exit_code: 2,
        duration_ms: 5,
        ran_at: 100,
      });
      expect(await store.latestForCommand('npm run lint')).toEqual({
        status: 'failed',
        detail: 'x',
        exit_code: 2,
        duration_ms: 5,
        ran_at: 100,
        scope: 's2',
      });
    }),
  );

  it(
    'STORE-PG-contracts: a waiver round-trips per scope, a second waive replaces it',
    withStore(async (store) => {
      expect(await store.waiver('', 'lint')).toBeUndefined();
      await store.waive('', 'lint', { reason: 'flaky', by: 'alice', at: 10 });
      await store.waive('s1', 'lint', { reason: 'local', by: 'bob', at: 11 });
      expect(await store.waiver('', 'lint')).toEqual({ reason: 'flaky', by: 'alice', at: 10 });
      await store.waive('', 'lint', { reason: 'still flaky', by: 'carol', at: 12 });
      expect(await store.waiver('', 'lint')).toEqual({ reason: 'still flaky', by: 'carol', at: 12 });
      expect(await store.waiver('s1', 'lint')).toEqual({ reason: 'local', by: 'bob', at: 11 });
      expect(await store.waiver('s2', 'lint')).toBeUndefined();
    }),
  );
}
