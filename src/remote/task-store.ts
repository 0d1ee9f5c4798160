/**
 * What delegation keeps in the database: the agent cards it fetched (`a2a_cards`, what a
 * capability search matches against) and the tasks it delegated (`a2a_tasks`, until deleted).
 * @module
 */
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import type { FetchedCard } from './a2a-client';
import { type CardSkill, cardSkills, TERMINAL_STATES } from './a2a-wire';

export type TargetKind = 'card_url' | 'name' | 'capability';

export interface KnownCard {
  card_url: string;
  name: string;
  description: string;
  rpc_url: string;
  skills: CardSkill[];
  source: string;
  fetched_at: number;
}

export interface TrackedTask {
  task_id: string;
  state: string;
  done: boolean;
  text: string | null;
  error: string | null;
  agent: { name: string; card_url: string; rpc_url: string };
  target: { kind: TargetKind; value: string };
  remote_task_id: string | null;
  context_id: string | null;
  session_id: string | null;
  created_at: number;
  updated_at: number;
  note?: string;
}

export interface TaskRow {
  id: string;
  session_id: string | null;
  run_id: string | null;
  target_kind: TargetKind;
  target: string;
  card_url: string;
  agent_name: string;
  rpc_url: string;
  remote_task_id: string | null;
  context_id: string | null;
  state: string;
  message: string;
  result_text: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}

export type NewTask = Pick<
  TaskRow,
  | 'id'
  | 'session_id'
  | 'run_id'
  | 'target_kind'
  | 'target'
  | 'card_url'
  | 'agent_name'
  | 'rpc_url'
  | 'message'
>;

export interface A2aStore {
  rememberCard(fetched: FetchedCard, source: string): Promise<KnownCard>;
  cards(): Promise<KnownCard[]>;
  insertTask(task: NewTask): Promise<void>;
  /** The task row; `not_found` naming task_id when there is none. */
  task(id: string): Promise<TaskRow>;
  updateTask(id: string, patch: Partial<TaskRow>): Promise<void>;
  deleteTask(id: string): Promise<void>;
  tasks(options?: { session_id?: string; limit?: number }): Promise<TaskRow[]>;
}

/** A fetched card as stored; `fetched_at` is now. */
export function knownCard(fetched: FetchedCard, source: string, now: number): KnownCard {
  return {
    card_url: fetched.card_url,
    name: fetched.card.name,
    description: fetched.card.description ?? '',
    rpc_url: fetched.rpc_url,
    skills: cardSkills(fetched.card),
    source,
    fetched_at: now,
  };
}

/** The upsert of a fetched card, placeholders `p(1)`…`p(8)` (SQLite and PostgreSQL). */
export const CARD_UPSERT = (p: (n: number) => string) =>
  `INSERT INTO a2a_cards (card_url, name, description, rpc_url, skills, card, source, fetched_at)
   VALUES (${[1, 2, 3, 4, 5, 6, 7, 8].map(p).join(', ')})
   ON CONFLICT(card_url) DO UPDATE SET name = excluded.name, description = excluded.description,
     rpc_url = excluded.rpc_url, skills = excluded.skills, card = excluded.card, source = excluded.source,
     fetched_at = excluded.fetched_at`;

export const cardUpsertValues = (known: KnownCard, fetched: FetchedCard): unknown[] => [
  known.card_url,
  known.name,
  known.description,
  known.rpc_url,
  JSON.stringify(known.skills),
  JSON.stringify(fetched.card),
  known.source,
  known.fetched_at,
];

/** An `a2a_cards` row as read: skills are the JSON as written. */
export type CardRow = Omit<KnownCard, 'skills'> & { skills: string };

export const cardOf = (row: CardRow): KnownCard => ({
  card_url: row.card_url,
  name: row.name,
  description: row.description,
  rpc_url: row.rpc_url,
  skills: JSON.parse(row.skills) as CardSkill[],
  source: row.source,
  fetched_at: row.fetched_at,
});

/** The insert of a new task (state `submitted`), placeholders `p(1)`…`p(11)`. */
export const TASK_INSERT = (p: (n: number) => string) =>
  `INSERT INTO a2a_tasks (id, session_id, run_id, target_kind, target, card_url, agent_name, rpc_url, state, message, created_at, updated_at)
   VALUES (${[1, 2, 3, 4, 5, 6, 7, 8].map(p).join(', ')}, 'submitted', ${[9, 10, 11].map(p).join(', ')})`;

export const taskInsertValues = (task: NewTask, now: number): unknown[] => [
  task.id,
  task.session_id,
  task.run_id,
  task.target_kind,
  task.target,
  task.card_url,
  task.agent_name,
  task.rpc_url,
  task.message,
  now,
  now,
];

/** The UPDATE of some columns and updated_at of one task, placeholders by `p`. */
export function taskPatch(
  id: string,
  patch: Partial<TaskRow>,
  now: number,
  p: (n: number) => string,
): { sql: string; values: unknown[] } {
  const entries = Object.entries(patch);
  const sets = entries.map(([key], i) => `${key} = ${p(i + 1)}`);
  return {
    sql: `UPDATE a2a_tasks SET ${[...sets, `updated_at = ${p(entries.length + 1)}`].join(', ')} WHERE id = ${p(entries.length + 2)}`,
    values: [...entries.map(([, value]) => value), now, id],
  };
}

export function taskNotFound(id: string): SvcError {
  return new SvcError('not_found', `task_id: no tracked A2A task "${id}"; a2a_delegate returns task ids`);
}

export function createA2aStore(deps: { db: () => Db; clock: Clock }): A2aStore {
  return {
    async rememberCard(fetched, source) {
      const known = knownCard(fetched, source, deps.clock.now());
      deps
        .db()
        .prepare(CARD_UPSERT(() => '?'))
        .run(...cardUpsertValues(known, fetched));
      return known;
    },

    cards: async () =>
      (deps.db().prepare('SELECT * FROM a2a_cards ORDER BY name, card_url').all() as CardRow[]).map(cardOf),

    async insertTask(task) {
      deps
        .db()
        .prepare(TASK_INSERT(() => '?'))
        .run(...taskInsertValues(task, deps.clock.now()));
    },

    async task(id) {
      const found = deps.db().prepare('SELECT * FROM a2a_tasks WHERE id = ?').get(id) as TaskRow | undefined;
      if (!found) throw taskNotFound(id);
      return found;
    },

    async updateTask(id, patch) {
      const update = taskPatch(id, patch, deps.clock.now(), () => '?');
      deps
        .db()
        .prepare(update.sql)
        .run(...update.values);
    },

    async deleteTask(id) {
      deps.db().prepare('DELETE FROM a2a_tasks WHERE id = ?').run(id);
    },

    async tasks(options = {}) {
      const limit = options.limit ?? 50;
      return (
        options.session_id
          ? deps
              .db()
              .prepare(
                'SELECT * FROM a2a_tasks WHERE session_id = ? ORDER BY created_at DESC, id DESC LIMIT ?',
              )
              .all(options.session_id, limit)
          : deps.db().prepare('SELECT * FROM a2a_tasks ORDER BY created_at DESC, id DESC LIMIT ?').all(limit)
      ) as TaskRow[];
    },
  };
}

/** The answer of a2a_delegate for a task row. */
export function viewTask(r: TaskRow, note?: string): TrackedTask {
  return {
    task_id: r.id,
    state: r.state,
    done: TERMINAL_STATES.has(r.state),
    text: r.result_text,
    error: r.error,
    agent: { name: r.agent_name, card_url: r.card_url, rpc_url: r.rpc_url },
    target: { kind: r.target_kind, value: r.target },
    remote_task_id: r.remote_task_id,
    context_id: r.context_id,
    session_id: r.session_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    ...(note ? { note } : {}),
  };
}
