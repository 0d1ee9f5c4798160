/**
 * The workflow stores' contract (issue 18): what every backend's `teams` and `workflow_templates`
 * answer, run on SQLite and on PostgreSQL by ./workflows.contract.test.ts. Pins: templates by
 * name, the definition JSON round-trips, replace counts the revision, inserting an existing name
 * fails, delete says whether a row went; teams by name, JSON parsed, saving an existing name keeps
 * its id and created_at, delete says whether a row went.
 */
import { expect, it } from 'vitest';
import type { WorkflowStores } from '../../../src/workflows/stores';
import { workflowDefinitionSchema } from '../../../src/workflows/workflow-definition';

export type OpenWorkflowStores = () => Promise<{
  stores: WorkflowStores;
  tick: (ms: number) => void;
  close: () => Promise<void>;
}>;

export function workflowStoresContract(open: OpenWorkflowStores): void {
  const withStores =
    (fn: (stores: WorkflowStores, tick: (ms: number) => void) => Promise<void>) => async () => {
      const { stores, tick, close } = await open();
      try {
        await fn(stores, tick);
      } finally {
        await close();
      }
    };

  const definition = (description: string) =>
    workflowDefinitionSchema().parse({
      description,
      steps: [{ id: 'a', agent: 'general', prompt: 'review the change' }],
    });

  it(
    'STORE-PG-workflows: templates by name, definitions round-trip, replace counts revisions',
    withStores(async ({ templates }, tick) => {
      expect(await templates.list()).toEqual([]);
      expect(await templates.get('x')).toBeUndefined();
      const saved = await templates.insert('zeta', definition('first'));
      expect(saved).toEqual({
        name: 'zeta',
        description: 'first',
        definition: definition('first'),
        revision: 1,
        created_at: 1000,
        updated_at: 1000,
      });
      await templates.insert('Alpha', definition('a'));
      await expect(templates.insert('zeta', definition('again'))).rejects.toThrow();
      tick(500);
      const replaced = await templates.replace('zeta', definition('second'));
      expect(replaced).toMatchObject({
        description: 'second',
        revision: 2,
        created_at: 1000,
        updated_at: 1500,
      });
      expect(replaced.definition).toEqual(definition('second'));
      expect((await templates.list()).map((t) => t.name)).toEqual(['Alpha', 'zeta']);
      expect(await templates.delete('Alpha')).toBe(true);
      expect(await templates.delete('Alpha')).toBe(false);
      expect((await templates.list()).map((t) => t.name)).toEqual(['zeta']);
    }),
  );

  it(
    'STORE-PG-workflows: teams by name, saving again keeps id and created_at, delete',
    withStores(async ({ teams }, tick) => {
      expect(await teams.list()).toEqual([]);
      const team = {
        name: 'reviewers',
        description: 'two reviewers',
        coordinator: { agent: 'general', instructions: 'split the work' },
        members: [
          { name: 'a', agent: 'explore', instructions: 'read', tools: ['read', 'grep'] },
          { name: 'b', agent: 'general', instructions: 'write', tools: null },
        ],
      };
      const first = await teams.save(team);
      expect(first).toEqual({ ...team, id: first.id, created_at: 1000, updated_at: 1000 });
      expect(first.id).toMatch(/^team_/);
      await teams.save({ ...team, name: 'Builders', members: [] });
      tick(250);
      const again = await teams.save({ ...team, description: 'three reviewers' });
      expect(again).toEqual({
        ...team,
        description: 'three reviewers',
        id: first.id,
        created_at: 1000,
        updated_at: 1250,
      });
      expect(await teams.get('reviewers')).toEqual(again);
      expect((await teams.list()).map((t) => t.name)).toEqual(['Builders', 'reviewers']);
      expect(await teams.delete('reviewers')).toBe(true);
      expect(await teams.delete('reviewers')).toBe(false);
      expect(await teams.get('reviewers')).toBeUndefined();
    }),
  );
}
