/**
 * The permission grants' contract (issue 18): what every backend's `permission_grants` answers,
 * run on SQLite and on PostgreSQL by ./permissions.contract.test.ts. Pins: `has` matches the exact
 * scope or a `*` grant, per root session and tool; adding an existing grant keeps the first one
 * (its created_at); lists are oldest first, then by tool; revoke removes one root's grants and
 * counts them; the cross-session read sees every session's grants in the same order.
 */
import { expect, it } from 'vitest';
import type { PermissionStores } from '../../../src/permissions/stores';
import { withOpened } from './fixture';

export type OpenPermissionStores = () => Promise<{ stores: PermissionStores; close: () => Promise<void> }>;

export function permissionsContract(open: OpenPermissionStores): void {
  const withStores = withOpened(open, (f) => f.stores);

  it(
    'STORE-PG-perm: has matches the scope or a * grant, per root and tool',
    withStores(async ({ grants }) => {
      expect(await grants.has('root1', 'bash', 'npm test')).toBe(false);
      await grants.add('root1', 'bash', 'npm test', 10);
      await grants.add('root1', 'write', '*', 11);
      expect(await grants.has('root1', 'bash', 'npm test')).toBe(true);
      expect(await grants.has('root1', 'bash', 'rm -rf')).toBe(false);
      expect(await grants.has('root1', 'bash', undefined)).toBe(false);
      expect(await grants.has('root1', 'write', 'a.ts')).toBe(true);
      expect(await grants.has('root1', 'write', undefined)).toBe(true);
      expect(await grants.has('root2', 'write', 'a.ts')).toBe(false);
    }),
  );

  it(
    'STORE-PG-perm: adding a held grant keeps the first; lists oldest first then by tool; revoke counts',
    withStores(async ({ grants, grantQueries }) => {
      await grants.add('root1', 'write', '*', 20);
      await grants.add('root1', 'bash', 'ls', 20);
      await grants.add('root1', 'edit', '*', 10);
      await grants.add('root1', 'edit', '*', 99);
      await grants.add('root2', 'bash', '*', 15);
      expect(await grants.list('root1')).toEqual([
        { session_id: 'root1', tool: 'edit', scope: '*', created_at: 10 },
        { session_id: 'root1', tool: 'bash', scope: 'ls', created_at: 20 },
        { session_id: 'root1', tool: 'write', scope: '*', created_at: 20 },
      ]);
      expect((await grantQueries.all()).map((g) => `${g.session_id}/${g.tool}@${g.created_at}`)).toEqual([
        'root1/edit@10',
        'root2/bash@15',
        'root1/bash@20',
        'root1/write@20',
      ]);
      expect(await grants.revoke('root1')).toBe(3);
      expect(await grants.revoke('root1')).toBe(0);
      expect(await grants.list('root1')).toEqual([]);
      expect(await grantQueries.all()).toEqual([
        { session_id: 'root2', tool: 'bash', scope: '*', created_at: 15 },
      ]);
    }),
  );
}
