/**
 * Teams (create_team, get_teams_status): a named set of agent roles, a coordinator and members,
 * persisted so later tasks reuse it. A team's tasks are `workflow_runs` of kind `team` whose ref
 * is the team id.
 * @module
 */
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';

export interface TeamRole {
  name: string;
  /** Sub-agent kind (general, explore, or an [agents.<id>] kind). */
  agent: string;
  instructions: string;
  /** Narrowed tool set, or null for the kind's own. */
  tools: string[] | null;
}

export interface Team {
  id: string;
  name: string;
  description: string;
  coordinator: { agent: string; instructions: string };
  members: TeamRole[];
  created_at: number;
  updated_at: number;
}

export type TeamDefinition = Pick<Team, 'name' | 'description' | 'coordinator' | 'members'>;

interface Row {
  id: string;
  name: string;
  description: string;
  coordinator: string;
  members: string;
  created_at: number;
  updated_at: number;
}

export interface TeamStore {
  get(name: string): Promise<Team | undefined>;
  list(): Promise<Team[]>;
  /** Insert, or replace the definition of the team of that name (same id, created_at kept). */
  save(definition: TeamDefinition): Promise<Team>;
  delete(name: string): Promise<boolean>;
}

export function createTeamStore(deps: { db: () => Db; clock: Clock; ids: Ids }): TeamStore {
  const toTeam = (row: Row): Team => ({
    ...row,
    coordinator: JSON.parse(row.coordinator),
    members: JSON.parse(row.members),
  });
  const store: TeamStore = {
    async get(name) {
      const row = deps.db().prepare('SELECT * FROM teams WHERE name = ?').get(name) as Row | undefined;
      return row ? toTeam(row) : undefined;
    },
    async list() {
      return (deps.db().prepare('SELECT * FROM teams ORDER BY name').all() as Row[]).map(toTeam);
    },
    async save(definition) {
      const now = deps.clock.now();
      const existing = await store.get(definition.name);
      if (existing) {
        deps
          .db()
          .prepare(
            'UPDATE teams SET description = ?, coordinator = ?, members = ?, updated_at = ? WHERE id = ?',
          )
          .run(
            definition.description,
            JSON.stringify(definition.coordinator),
            JSON.stringify(definition.members),
            now,
            existing.id,
          );
      } else {
        deps
          .db()
          .prepare(
            'INSERT INTO teams (id, name, description, coordinator, members, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          )
          .run(
            deps.ids.next('team'),
            definition.name,
            definition.description,
            JSON.stringify(definition.coordinator),
            JSON.stringify(definition.members),
            now,
            now,
          );
      }
      return (await store.get(definition.name))!;
    },
    async delete(name) {
      return deps.db().prepare('DELETE FROM teams WHERE name = ?').run(name).changes > 0;
    },
  };
  return store;
}
