/**
 * `prompt_stack_builds` on PostgreSQL (issue 18): the twin of ./prompt-stack-store.ts, the same
 * answers (builds numbered in insertion order and newest first, sections JSON parsed).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  buildValues,
  type PromptBuild,
  type PromptSectionRecord,
  type PromptStackStore,
} from './prompt-stack-store';

type BuildRow = Omit<PromptBuild, 'sections'> & { sections: string };

const BUILD_COLUMNS =
  'build_id, session_id, run_id, agent, section_count, total_chars, token_estimate, sha256_prefix, sections, created_at';

const toBuild = ({ sections, ...rest }: BuildRow): PromptBuild => ({
  ...rest,
  sections: JSON.parse(sections) as PromptSectionRecord[],
});

const insertAt = (o: number) =>
  `INSERT INTO prompt_stack_builds (${BUILD_COLUMNS}) VALUES (${Array.from({ length: 10 }, (_, i) => `$${o + i + 1}`).join(', ')}) RETURNING id`;
const INSERT = insertAt(0);

export function createPostgresPromptStackStore(deps: { sql: SqlClient }): PromptStackStore {
  const { sql } = deps;
  return {
    async insert(build) {
      const row = await sql.one<{ id: number }>(INSERT, buildValues(build));
      return Number(row?.id);
    },
    // The same insert, made by the run ledger's statement with the run's preparation events.
    // Or in a following write of the run's events, its parameters after theirs (p-pgprep3).
    insertWrite: (build) => ({ text: INSERT, values: buildValues(build), at: insertAt }),
    async pruneThrough(id) {
      await sql.run('DELETE FROM prompt_stack_builds WHERE id <= $1', [id]);
    },
    async recent(options) {
      const rows = options.sessionId
        ? await sql.query<BuildRow>(
            `SELECT ${BUILD_COLUMNS} FROM prompt_stack_builds WHERE session_id = $1 ORDER BY id DESC LIMIT $2`,
            [options.sessionId, options.limit],
          )
        : await sql.query<BuildRow>(
            `SELECT ${BUILD_COLUMNS} FROM prompt_stack_builds ORDER BY id DESC LIMIT $1`,
            [options.limit],
          );
      return rows.map(toBuild);
    },
    async count(sessionId) {
      const row = sessionId
        ? await sql.one<{ n: number }>(
            'SELECT count(*) AS n FROM prompt_stack_builds WHERE session_id = $1',
            [sessionId],
          )
        : await sql.one<{ n: number }>('SELECT count(*) AS n FROM prompt_stack_builds');
      return Number(row?.n ?? 0);
    },
    async probe() {
      await sql.query('SELECT 1 FROM prompt_stack_builds LIMIT 1');
    },
  };
}
