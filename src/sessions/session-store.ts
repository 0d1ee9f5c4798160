/**
 * Sessions and their messages in svc.db. Messages are typed parts stored as JSON; their writes and
 * reads are ./message-store.ts, the shapes ./types.ts.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import { type Db, groupCommit } from '../store/db';
import { wrote } from '../store/read-scope';
import { statementCache } from '../store/statement-cache';
import { flushHeld, transactionMemo } from '../store/transaction-memo';
import type { Clock, Ids } from '../util/ids';
import { createMessageStore } from './message-store';
import { knownSessionRows } from './session-row-known';
import { sessionRowKey } from './session-row-version';
import { createSessionSearch } from './session-search';
import { createSessionSearchRepository } from './session-search-repository';
import type { CreateSessionInput, MessagePatch, Session, SessionRow, SessionStore, StepClose } from './types';
import { writtenMessages } from './written-messages';

export type {
  CreateSessionInput,
  Message,
  MessagePart,
  MessageRole,
  ProviderMetadata,
  Session,
  SessionPatch,
  SessionSearchHit,
  SessionSearchOptions,
  SessionStore,
  Usage,
} from './types';

/** The values of a new session row, in the column order both backends insert them. */
export function newSessionValues(input: CreateSessionInput, id: string, workspace: string, now: number) {
  return [
    id,
    input.parent_id ?? null,
    input.title ?? '',
    input.mode ?? 'build',
    input.agent ?? 'build',
    input.model ?? null,
    workspace,
    JSON.stringify(input.metadata ?? {}),
    now,
    now,
  ];
}

/**
 * The row `INSERT … RETURNING *` of `newSessionValues` answers: the values, and the defaults of the
 * columns the INSERT leaves out (migration `foundation`: `reasoning_effort` NULL, the usage 0).
 * SQLite's create builds it instead of `RETURNING *`, whose ephemeral table and row object were
 * ≈ 5 µs of every compat request (p-sqlcompat); COMPAT-PERF-64 pins it against a read's row.
 */
export function newSessionRow(values: ReturnType<typeof newSessionValues>): SessionRow {
  const [id, parent_id, title, mode, agent, model, workspace, metadata, created_at, updated_at] = values;
  return {
    id,
    parent_id,
    title,
    mode,
    agent,
    model,
    reasoning_effort: null,
    workspace,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost: 0,
    metadata,
    created_at,
    updated_at,
  } as SessionRow;
}

// `sessions`' columns in the table's order (`SELECT *`): `newSessionRow`'s keys, whatever the values.
const SESSION_COLUMNS: readonly string[] = Object.keys(newSessionRow(newSessionValues({}, '', '', 0)));

/** A step's usage added to its session (`addUsage`): the usage, `updated_at`, then the id. */
const USAGE_UPDATE =
  'UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, cost = cost + ?, updated_at = ? WHERE id = ?';

/**
 * The session rows this store wrote in the current write transaction, as their statements
 * returned them (issue 17 item 3: a compat request creates its session, appends the prompt and
 * reads the row back in one transaction). No other connection writes until it ends (then the
 * memo is dropped, ../store/transaction-memo.ts), and each write of the store to a row sets or
 * drops its entry.
 */
function writtenRows(db: () => Db) {
  const owner = {};
  const memo = () => transactionMemo<SessionRow>(db(), owner);
  return {
    get: (id: string) => memo()?.get(id),
    keep(row: SessionRow | undefined, id: string): void {
      const rows = memo();
      if (!rows) return;
      if (row) rows.set(id, row);
      else rows.delete(id);
    },
    /** The row's `updated_at` set by a message write (the row otherwise as it was). */
    touch(id: string, now: number): void {
      const rows = memo();
      const row = rows?.get(id);
      if (row) rows?.set(id, { ...row, updated_at: now });
    },
    /** The row's `updated_at` as this transaction wrote it (a message write skips an UPDATE to it). */
    updatedAt: (id: string) => memo()?.get(id)?.updated_at,
  };
}

/**
 * The reads of a whole session row and the usage UPDATE, over the sessions' fixed columns this
 * process holds (./session-row-known.ts): a row read is held; the usage UPDATE of a held session
 * returns only the columns some writer may change, of another `*` (then held).
 */
function heldRowStatements(sql: (text: string) => Statement, clock: Clock) {
  const known = knownSessionRows(SESSION_COLUMNS, sql);
  return {
    known,
    read(id: string): SessionRow | undefined {
      const row = sql('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
      known.keep(row);
      return row;
    },
    addUsage(id: string, usage: NonNullable<StepClose['usage']>): SessionRow | undefined {
      const now = clock.now();
      const params = [usage.input_tokens, usage.output_tokens, usage.cost, now];
      return known.update(id, USAGE_UPDATE, params);
    },
  };
}

/** A session and its descendants, parents first. */
const FAMILY = `WITH RECURSIVE fam(id, depth) AS (SELECT id, 0 FROM sessions WHERE id = ?
     UNION ALL SELECT s.id, fam.depth + 1 FROM sessions s JOIN fam ON s.parent_id = fam.id)
   SELECT s.* FROM sessions s JOIN fam ON s.id = fam.id ORDER BY fam.depth, s.created_at`;

/**
 * `closeStep` on SQLite: one promise for a step's end where updateMessage and addUsage cost one
 * each, and the agent's Promise.all over them more; the same statements in the same order. As the
 * separate calls were: every update is tried, the usage added, then the first failure answered.
 */
function stepCloser(
  patchMessageRow: (id: string, patch: MessagePatch) => void,
  addUsageRow: (id: string, usage: NonNullable<StepClose['usage']>) => Session | undefined,
): NonNullable<SessionStore['closeStep']> {
  return async ({ sessionId, messages, usage }) => {
    let failed = false;
    let failure: unknown;
    for (const { id, patch } of messages) {
      try {
        patchMessageRow(id, patch);
      } catch (error) {
        if (!failed) failure = error;
        failed = true;
      }
    }
    const session = usage ? addUsageRow(sessionId, usage) : undefined;
    if (failed) throw failure;
    return session;
  };
}

export function createSessionStore(deps: {
  db: () => Db;
  clock: Clock;
  ids: Ids;
  bus?: EventBus;
  workspace: string;
  redact?: (text: string) => string; // the redactor's `string`, for search snippets
}): SessionStore {
  const db = deps.db;
  const sql = statementCache(db);
  const toSession = (row: SessionRow): Session => ({ ...row, metadata: JSON.parse(row.metadata) });
  const { get: writtenRow, keep, ...sessionRows } = writtenRows(db);
  const written = writtenMessages(db);
  const rows = heldRowStatements(sql, deps.clock);
  const get = (id: string) => {
    const row = writtenRow(id) ?? rows.read(id);
    return row ? toSession(row) : undefined;
  };
  const require = (id: string) => {
    const s = get(id);
    if (!s) throw new SvcError('not_found', `session_id: no session "${id}"; see svc session list`);
    return s;
  };
  const family = (rootId: string): Session[] => (sql(FAMILY).all(rootId) as SessionRow[]).map(toSession);

  const { patchMessageRow, ...messageStore } = createMessageStore({
    db,
    sql,
    clock: deps.clock,
    ids: deps.ids,
    requireSession: require,
    sessionRows,
    written,
  });
  const search = createSessionSearch({
    repository: createSessionSearchRepository(db),
    get: async (id) => get(id),
    redact: deps.redact,
  });
  const addUsageRow = (id: string, usage: NonNullable<StepClose['usage']>): Session | undefined => {
    groupCommit(db());
    const row = rows.addUsage(id, usage);
    keep(row, id);
    wrote(sessionRowKey(id));
    return row ? toSession(row) : undefined;
  };
  // The interface is async (issue 18: a second backend); SQLite answers synchronously inside.

  return {
    async create(input = {}) {
      const now = deps.clock.now();
      if (input.parent_id) require(input.parent_id);
      const id = input.id ?? deps.ids.next('ses');
      const values = newSessionValues(input, id, deps.workspace, now);
      sql(
        `INSERT INTO sessions (id, parent_id, title, mode, agent, model, workspace, metadata, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...values);
      const row = newSessionRow(values);
      keep(row, id);
      rows.known.keep(row);
      written.sessionCreated(id);
      const session = toSession(row);
      wrote(sessionRowKey(id));
      deps.bus?.publish(id, 'session.created', {
        session_id: id,
        parent_id: session.parent_id,
        title: session.title,
      });
      return session;
    },
    get: async (id) => get(id),
    require: async (id) => require(id),
    async list(options = {}) {
      const limit = options.limit ?? 100;
      const offset = options.offset ?? 0;
      const rows =
        options.parent_id === undefined
          ? sql('SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?').all(
              limit,
              offset,
            )
          : options.parent_id === null
            ? sql(
                'SELECT * FROM sessions WHERE parent_id IS NULL ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?',
              ).all(limit, offset)
            : sql(
                'SELECT * FROM sessions WHERE parent_id = ? ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?',
              ).all(options.parent_id, limit, offset);
      return (rows as SessionRow[]).map(toSession);
    },
    family: async (rootId) => family(rootId),
    async root(id) {
      const row = sql(
        `WITH RECURSIVE up(id, parent_id, depth) AS (SELECT id, parent_id, 0 FROM sessions WHERE id = ?
             UNION ALL SELECT s.id, s.parent_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent_id WHERE up.depth < 64)
           SELECT id FROM up ORDER BY depth DESC LIMIT 1`,
      ).get(id) as { id: string } | undefined;
      return row?.id ?? id;
    },
    async update(id, patch) {
      const current = require(id);
      keep(undefined, id);
      const next = {
        title: patch.title ?? current.title,
        mode: patch.mode ?? current.mode,
        agent: patch.agent ?? current.agent,
        model: patch.model === undefined ? current.model : patch.model,
        reasoning_effort:
          patch.reasoning_effort === undefined ? current.reasoning_effort : patch.reasoning_effort,
        metadata: patch.metadata ? { ...current.metadata, ...patch.metadata } : current.metadata,
      };
      sql(
        `UPDATE sessions SET title = ?, mode = ?, agent = ?, model = ?, reasoning_effort = ?, metadata = ?, updated_at = ?
           WHERE id = ?`,
      ).run(
        next.title,
        next.mode,
        next.agent,
        next.model,
        next.reasoning_effort,
        JSON.stringify(next.metadata),
        deps.clock.now(),
        id,
      );
      wrote(sessionRowKey(id));
      const session = require(id);
      deps.bus?.publish(id, 'session.updated', { session_id: id, changed: Object.keys(patch) });
      return session;
    },
    async delete(id) {
      const ids = family(id).map((s) => s.id);
      if (ids.length === 0) require(id);
      for (const removed of [id, ...ids]) keep(undefined, removed);
      for (const removed of [id, ...ids]) rows.known.forget(removed);
      written.sessionsDeleted();
      cascadingDelete(sql('DELETE FROM sessions WHERE id = ?'), id);
      for (const removed of ids) wrote(sessionRowKey(removed));
      for (const removed of ids) deps.bus?.publish(removed, 'session.deleted', { session_id: removed });
      return ids;
    },
    search,
    addUsage: async (id, usage) => addUsageRow(id, usage),
    closeStep: stepCloser(patchMessageRow, addUsageRow),
    ...messageStore,
    async count() {
      return (sql('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
    },
  };
}

/**
 * Runs a delete whose cascade reaches the run events: those the handle's transaction holds for
 * one INSERT (../runs/run-events.ts, ../store/held-rows.ts) go in first, the cascade takes them.
 */
function cascadingDelete(statement: Statement, id: string): void {
  flushHeld(statement.database);
  statement.run(id);
}
