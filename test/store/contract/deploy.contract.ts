/**
 * The deployment repository's contract (issue 18): what every backend's `deployments` answer,
 * run on SQLite and on PostgreSQL by ./deploy.contract.test.ts. Pins: a new deployment reads
 * `failed`/`starting` with no URL nor pid; a redeploy resets the row and keeps created_at; a patch
 * sets columns (nulls kept) and updated_at; deployments by name, one fleet's when given; running
 * ones are those with a URL; delete forgets; a missing one is undefined.
 */
import { expect, it } from 'vitest';
import type { DeploymentRepository, NewDeployment } from '../../../src/deploy/deployment-repository';
import { withOpened } from './fixture';

export type OpenDeploymentRepository = () => Promise<{
  rows: DeploymentRepository;
  close: () => Promise<void>;
}>;

const deployment = (name: string, over: Partial<NewDeployment> = {}): NewDeployment => ({
  name,
  fleet: null,
  target: 'local',
  agent: 'primary',
  model: null,
  tools: '{"allow":["read_file"]}',
  skills: '["review"]',
  token_ref: `credentials:deploy:abc:${name}`,
  data_dir: `/data/deploy/${name}`,
  overrides: '["a2a.enabled=true"]',
  log_path: `/data/deploy/${name}/service.log`,
  ...over,
});

export function deploymentRepositoryContract(open: OpenDeploymentRepository): void {
  const withRows = withOpened(open, (f) => f.rows);

  it(
    'STORE-PG-deploy: a new deployment reads failed/starting; a redeploy resets it and keeps created_at; a patch sets columns',
    withRows(async (rows) => {
      expect(await rows.get('alpha')).toBeUndefined();
      await rows.upsertStarting(deployment('alpha', { fleet: 'f1', model: 'large' }), 100, 100 - 60_000);
      const starting = {
        ...deployment('alpha', { fleet: 'f1', model: 'large' }),
        url: null,
        pid: null,
        status: 'failed',
        health: 'unknown',
        last_error: 'starting',
        checked_at: null,
        created_at: 100,
        updated_at: 100,
      };
      expect(await rows.get('alpha')).toEqual(starting);
      await rows.patch(
        'alpha',
        {
          url: 'http://127.0.0.1:4100',
          pid: 4242,
          status: 'running',
          health: 'healthy',
          last_error: null,
          checked_at: 150,
        },
        150,
      );
      expect(await rows.get('alpha')).toEqual({
        ...starting,
        url: 'http://127.0.0.1:4100',
        pid: 4242,
        status: 'running',
        health: 'healthy',
        last_error: null,
        checked_at: 150,
        updated_at: 150,
      });
      await rows.upsertStarting(
        deployment('alpha', { agent: 'reviewer', target: 'box', skills: '[]' }),
        300,
        300 - 60_000,
      );
      expect(await rows.get('alpha')).toEqual({
        ...deployment('alpha', { agent: 'reviewer', target: 'box', skills: '[]' }),
        url: null,
        pid: null,
        status: 'failed',
        health: 'unknown',
        last_error: 'starting',
        checked_at: 150,
        created_at: 100,
        updated_at: 300,
      });
      await rows.patch('never', { status: 'stopped' }, 400);
      expect(await rows.get('never')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-deploy: two deploys of one name racing: exactly one starts; a start older than the window is taken over',
    withRows(async (rows) => {
      const results = await Promise.all([
        rows.upsertStarting(deployment('race', { model: 'one' }), 1_000, 1_000 - 60_000),
        rows.upsertStarting(deployment('race', { model: 'two' }), 1_000, 1_000 - 60_000),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results[0] ? 'one' : 'two';
      expect(await rows.upsertStarting(deployment('race', { model: 'three' }), 2_000, 2_000 - 60_000)).toBe(
        false,
      );
      expect((await rows.get('race'))?.model).toBe(winner);
      // The first deploy's process never reported back: past the window a new deploy may start.
      expect(await rows.upsertStarting(deployment('race', { model: 'four' }), 70_000, 70_000 - 60_000)).toBe(
        true,
      );
      expect(await rows.get('race')).toMatchObject({ model: 'four', updated_at: 70_000, created_at: 1_000 });
      await rows.patch('race', { status: 'running', url: 'http://r', pid: 3, last_error: null }, 70_100);
      expect(await rows.upsertStarting(deployment('race', { model: 'five' }), 70_200, 70_200 - 60_000)).toBe(
        true,
      );
    }),
  );

  it(
    'STORE-PG-deploy: deployments by name, one fleet when given; running ones have a URL; delete forgets',
    withRows(async (rows) => {
      expect(await rows.list()).toEqual([]);
      expect(await rows.running()).toEqual([]);
      await rows.upsertStarting(deployment('zeta', { fleet: 'f1' }), 100, 100 - 60_000);
      await rows.upsertStarting(deployment('Beta', { fleet: 'f2' }), 110, 110 - 60_000);
      await rows.upsertStarting(deployment('alpha', { fleet: 'f1' }), 120, 120 - 60_000);
      await rows.upsertStarting(deployment('gamma'), 130, 130 - 60_000);
      expect((await rows.list()).map((r) => r.name)).toEqual(['Beta', 'alpha', 'gamma', 'zeta']);
      expect((await rows.list('f1')).map((r) => r.name)).toEqual(['alpha', 'zeta']);
      expect(await rows.list('none')).toEqual([]);
      await rows.patch('zeta', { status: 'running', url: 'http://z', pid: 1 }, 200);
      await rows.patch('alpha', { status: 'running', url: 'http://a', pid: 2 }, 200);
      await rows.patch('gamma', { status: 'running' }, 200);
      await rows.patch('Beta', { status: 'stopped', url: 'http://b' }, 200);
      expect((await rows.running()).map((r) => r.name).sort()).toEqual(['alpha', 'zeta']);
      expect((await rows.running()).find((r) => r.name === 'zeta')).toMatchObject({
        url: 'http://z',
        pid: 1,
      });
      await rows.delete('zeta');
      await rows.delete('never');
      expect((await rows.list()).map((r) => r.name)).toEqual(['Beta', 'alpha', 'gamma']);
      expect((await rows.running()).map((r) => r.name)).toEqual(['alpha']);
      expect(await rows.get('zeta')).toBeUndefined();
    }),
  );
}
