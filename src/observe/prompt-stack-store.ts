/**
 * Persistence of the prompt stack ledger (`prompt_stack_builds`, metadata of every system-prompt
 * assembly; never its text). ./prompt-stack.ts decides what is stored.
 * @module
 */
import type { Db } from '../store/db';
import type { RidingInsert } from '../store/preceding-write';
import { statementCache } from '../store/statement-cache';

export interface PromptSectionRecord {
  name: string;
  source: string;
  chars: number;
  token_estimate: number;
  sha256_prefix: string;
}

export interface PromptBuild {
  build_id: string;
  session_id: string | null;
  run_id: string | null;
  agent: string;
  section_count: number;
  total_chars: number;
  token_estimate: number;
  /** sha256 of the whole system prompt, first 16 hex characters. */
  sha256_prefix: string;
  sections: PromptSectionRecord[];
  created_at: number;
}

export interface PromptStackStore {
  /** Stores a build; returns its row id (builds are numbered in insertion order). */
  insert(build: PromptBuild): Promise<number>;
  /**
   * PostgreSQL: the build's insert as text, for another domain's statement to make (it answers the
   * row id, as `insert`). Absent (SQLite): `insert` only.
   */
  insertWrite?(build: PromptBuild): RidingInsert;
  /** SQLite: `insert` answering the row id itself, no promise (p-promptheld). Absent on PostgreSQL. */
  insertNow?(build: PromptBuild): number;
  /** Drops the builds up to this row id. */
  pruneThrough(id: number): Promise<void>;
  /** Newest first. */
  recent(options: { sessionId?: string; limit: number }): Promise<PromptBuild[]>;
  count(sessionId?: string): Promise<number>;
  /** Throws when the table cannot be read. */
  probe(): Promise<void>;
}

interface Row extends Omit<PromptBuild, 'sections'> {
  id: number;
  sections: string;
}

const toBuild = ({ id: _id, sections, ...rest }: Row): PromptBuild => ({
  ...rest,
  sections: JSON.parse(sections) as PromptSectionRecord[],
});

/** A build's column values, in the order of both stores' INSERT (build_id … created_at). */
export function buildValues(build: PromptBuild): unknown[] {
  return [
    build.build_id,
    build.session_id,
    build.run_id,
    build.agent,
    build.section_count,
    build.total_chars,
    build.token_estimate,
    build.sha256_prefix,
    JSON.stringify(build.sections),
    build.created_at,
  ];
}

export function createPromptStackStore(db: () => Db): PromptStackStore {
  // Every run inserts a row (every compat request is a run): its statement is prepared once.
  const sql = statementCache(db);
  const insertNow = (build: PromptBuild) =>
    Number(
      sql(
        `INSERT INTO prompt_stack_builds (build_id, session_id, run_id, agent, section_count, total_chars,
             token_estimate, sha256_prefix, sections, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...buildValues(build)).lastInsertRowid,
    );
  return {
    insert: async (build) => insertNow(build),
    insertNow,
    async pruneThrough(id) {
      sql('DELETE FROM prompt_stack_builds WHERE id <= ?').run(id);
    },
    async recent(options) {
      const rows = (
        options.sessionId
          ? db()
              .prepare('SELECT * FROM prompt_stack_builds WHERE session_id = ? ORDER BY id DESC LIMIT ?')
              .all(options.sessionId, options.limit)
          : db().prepare('SELECT * FROM prompt_stack_builds ORDER BY id DESC LIMIT ?').all(options.limit)
      ) as Row[];
      return rows.map(toBuild);
    },
    async count(sessionId) {
      const row = (
        sessionId
          ? db().prepare('SELECT count(*) AS n FROM prompt_stack_builds WHERE session_id = ?').get(sessionId)
          : db().prepare('SELECT count(*) AS n FROM prompt_stack_builds').get()
      ) as { n: number };
      return row.n;
    },
    async probe() {
      db().prepare('SELECT 1 FROM prompt_stack_builds LIMIT 1').get();
    },
  };
}
