/**
 * `teams` on PostgreSQL (issue 18): the twin of ./team-store.ts, the same answers (teams by name
 * in byte order, coordinator and members JSON parsed; saving an existing name keeps its id and
 * created_at). The insert-or-update is one statement on the name's unique constraint.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import type { Team, TeamStore } from './team-store';

interface Row {
  id: string;
  name: string;
  description: string;
  coordinator: string;
  members: string;
  created_at: number;
  updated_at: number;
  [column: string]: unknown;
}

const COLUMNS = 'id, name, description, coordinator, members, created_at, updated_at';

export function createPostgresTeamStore(deps: { sql: SqlClient; clock: Clock; ids: Ids }): TeamStore {
  const { sql } = deps;
  const toTeam = ({ id, name, description, coordinator, members, created_at, updated_at }: Row): Team => ({
    id,
    name,
    description,
    coordinator: JSON.parse(coordinator),
    members: JSON.parse(members),
    created_at,
    updated_at,
  });
  const get = async (name: string) => {
    const row = await sql.one<Row>(`SELECT ${COLUMNS} FROM teams WHERE name = $1`, [name]);
    return row ? toTeam(row) : undefined;
  };
  return {
    get,
    list: async () =>
      (await sql.query<Row>(`SELECT ${COLUMNS} FROM teams ORDER BY name COLLATE "C"`)).map(toTeam),
    async save(definition) {
      const now = deps.clock.now();
      const row = await sql.one<Row>(
        `INSERT INTO teams (id, name, description, coordinator, members, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6)
           ON CONFLICT (name) DO UPDATE SET description = excluded.description, coordinator = excluded.coordinator,
             members = excluded.members, updated_at = excluded.updated_at
         RETURNING ${COLUMNS}`,
        [
          deps.ids.next('team'),
          definition.name,
          definition.description,
          JSON.stringify(definition.coordinator),
          JSON.stringify(definition.members),
          now,
        ],
      );
      if (!row) throw new Error(`team ${definition.name} was not saved`);
      return toTeam(row);
    },
    delete: async (name) => (await sql.run('DELETE FROM teams WHERE name = $1', [name])) > 0,
  };
}
