/**
 * Sessions and their messages on PostgreSQL (issue 18, first stage): the same semantics as
 * ./session-store.ts (ids, ordering, family and root, delete with children and messages, the
 * not_found errors, search), every method async. Nothing serves from it yet; it is checked by the
 * repository contract suite (test/store/contract/) against the SQLite store.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { SqlClient } from '../store/postgres/client';
import { enableReadScopes, peek, readThrough, remember, type TransactionEnd } from '../store/read-scope';
import type { Clock, Ids } from '../util/ids';
import type { AsyncOf } from './async-of';
import { keptSessions } from './pg-kept-sessions';
import { createPostgresMessageStore } from './pg-message-store';
import { postgresPromptInsert } from './pg-prompt-repository';
import { marked, wroteMessages, wroteSession } from './pg-session-rows';
import { createPostgresSessionSearch } from './pg-session-search-repository';
import { createPostgresStepClose } from './pg-step-close-repository';
import { sessionRowKey } from './session-row-version';
import { newSessionRow, newSessionValues } from './session-store';
import type { Session, SessionRow, SessionStore } from './types';

export type PostgresSessionStore = AsyncOf<SessionStore>;

const toSession = (row: SessionRow): Session => ({ ...row, metadata: JSON.parse(row.metadata) });

const INSERT_SESSION = `INSERT INTO sessions (id, parent_id, title, mode, agent, model, workspace, metadata, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;
/** `createHeld`'s INSERT: one string, so the start statement it rides in is kept per shape (p-pgappend). */
const INSERT_SESSION_ID = `${INSERT_SESSION} RETURNING id`;

/** A row this process just wrote (`RETURNING *`) in `tx` (taken before the statement): the read scope's copy. */
function wroteRow(sql: SqlClient, row: SessionRow, tx: TransactionEnd | undefined): void {
  wroteSession(sql, row.id, tx);
  remember(sessionRowKey(row.id), row, tx);
}

export function createPostgresSessionStore(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
  bus?: EventBus;
  workspace: string;
  /** The redactor's `string`, for search snippets. */
  redact?: (text: string) => string;
}): PostgresSessionStore {
  const { sql } = deps;
  enableReadScopes();
  const load = (id: string) => sql.one<SessionRow>('SELECT * FROM sessions WHERE id = $1', [id]);
  const kept = keptSessions(sql);
  // Inside a read scope (an agent send, a run's preparation), the row read once (../store/read-scope.ts);
  // outside, kept while no write to it is known (./pg-kept-sessions.ts).
  const get = async (id: string) => {
    const row = await readThrough(
      sessionRowKey(id),
      () => kept.read(id, () => load(id)),
      sql.transactionNow(),
    );
    return row ? toSession(row) : undefined;
  };
  const require = async (id: string) => {
    const session = await get(id);
    if (!session) throw new SvcError('not_found', `session_id: no session "${id}"; see svc session list`);
    return session;
  };
  /** `require` from the database: the read of a read-modify-write. */
  const requireFresh = async (id: string) => {
    const row = await load(id);
    if (!row) throw new SvcError('not_found', `session_id: no session "${id}"; see svc session list`);
    return toSession(row);
  };
  const family = async (rootId: string) => {
    const rows = await sql.query<SessionRow>(
      `WITH RECURSIVE fam(id, depth) AS (SELECT id, 0 FROM sessions WHERE id = $1
           UNION ALL SELECT s.id, fam.depth + 1 FROM sessions s JOIN fam ON s.parent_id = fam.id)
         SELECT s.* FROM sessions s JOIN fam ON s.id = fam.id ORDER BY fam.depth, s.created_at`,
      [rootId],
    );
    return rows.map(toSession);
  };
  const messageStore = createPostgresMessageStore({
    sql,
    clock: deps.clock,
    ids: deps.ids,
    requireSession: require,
    ...(deps.bus ? { bus: deps.bus } : {}),
  });
  return {
    ...sessionWrites({ ...deps, require, requireFresh, family }),
    promptInsert: postgresPromptInsert(deps),
    get,
    require,
    pending(id) {
      const row = kept.pending(id);
      return row ? toSession(row) : undefined;
    },
    async list(options = {}) {
      const limit = options.limit ?? 100;
      const offset = options.offset ?? 0;
      const rows =
        options.parent_id === undefined
          ? await sql.query<SessionRow>(
              'SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2',
              [limit, offset],
            )
          : options.parent_id === null
            ? await sql.query<SessionRow>(
                'SELECT * FROM sessions WHERE parent_id IS NULL ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2',
                [limit, offset],
              )
            : await sql.query<SessionRow>(
                'SELECT * FROM sessions WHERE parent_id = $1 ORDER BY updated_at DESC, id DESC LIMIT $2 OFFSET $3',
                [options.parent_id, limit, offset],
              );
      return rows.map(toSession);
    },
    family,
    async root(id) {
      // A top-level session read in this scope is its own root.
      if (peek<SessionRow | undefined>(sessionRowKey(id))?.value?.parent_id === null) return id;
      const row = await sql.one<{ id: string }>(
        `WITH RECURSIVE up(id, parent_id, depth) AS (SELECT id, parent_id, 0 FROM sessions WHERE id = $1
             UNION ALL SELECT s.id, s.parent_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent_id WHERE up.depth < 64)
           SELECT id FROM up ORDER BY depth DESC LIMIT 1`,
        [id],
      );
      return row?.id ?? id;
    },
    search: createPostgresSessionSearch({ sql, toSession, redact: deps.redact }),
    ...messageStore,
    ...createPostgresStepClose({ sql, clock: deps.clock, ids: deps.ids }),
    async count() {
      return (await sql.one<{ n: number }>('SELECT count(*) AS n FROM sessions'))?.n ?? 0;
    },
  };
}

/** create, update, delete and addUsage: the writes to the sessions table. */
function sessionWrites(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
  bus?: EventBus;
  workspace: string;
  require: (id: string) => Promise<Session>;
  requireFresh: (id: string) => Promise<Session>;
  family: (id: string) => Promise<Session[]>;
}): Pick<PostgresSessionStore, 'create' | 'createHeld' | 'update' | 'delete' | 'addUsage'> {
  const { sql, require } = deps;
  const kept = keptSessions(sql);
  const created = (id: string, session: Session) =>
    deps.bus?.publish(id, 'session.created', {
      session_id: id,
      parent_id: session.parent_id,
      title: session.title,
    });
  return {
    // The row as `INSERT … RETURNING *` answers it (the columns' defaults), its INSERT handed out.
    createHeld(input = {}) {
      const tx = sql.transactionNow();
      if (!tx || input.parent_id) throw new Error('createHeld: a session without a parent, in a transaction');
      const id = input.id ?? deps.ids.next('ses');
      const values = newSessionValues(input, id, deps.workspace, deps.clock.now());
      const row = newSessionRow(values);
      wroteRow(sql, row, tx);
      const session = toSession(row);
      created(id, session);
      const stamp = (at: number) => {
        values[9] = at;
        row.updated_at = at;
        session.updated_at = at;
      };
      return { session, insert: { text: INSERT_SESSION_ID, values, stamp } };
    },
    async create(input = {}) {
      const now = deps.clock.now();
      if (input.parent_id) await require(input.parent_id);
      const id = input.id ?? deps.ids.next('ses');
      const tx = sql.transactionNow();
      const mark = kept.mark(id);
      const row = await marked(sql, id, tx, () =>
        sql.one<SessionRow>(
          `${INSERT_SESSION} RETURNING *`,
          newSessionValues(input, id, deps.workspace, now),
        ),
      );
      if (row) wroteRow(sql, row, tx);
      kept.wrote(mark, row);
      const session = row ? toSession(row) : await require(id);
      created(id, session);
      return session;
    },
    async update(id, patch) {
      const current = await deps.requireFresh(id);
      const next = {
        title: patch.title ?? current.title,
        mode: patch.mode ?? current.mode,
        agent: patch.agent ?? current.agent,
        model: patch.model === undefined ? current.model : patch.model,
        reasoning_effort:
          patch.reasoning_effort === undefined ? current.reasoning_effort : patch.reasoning_effort,
        metadata: patch.metadata ? { ...current.metadata, ...patch.metadata } : current.metadata,
      };
      const tx = sql.transactionNow();
      const mark = kept.mark(id);
      const row = await marked(sql, id, tx, () =>
        sql.one<SessionRow>(
          `UPDATE sessions SET title = $1, mode = $2, agent = $3, model = $4, reasoning_effort = $5, metadata = $6, updated_at = $7
           WHERE id = $8 RETURNING *`,
          [
            next.title,
            next.mode,
            next.agent,
            next.model,
            next.reasoning_effort,
            JSON.stringify(next.metadata),
            deps.clock.now(),
            id,
          ],
        ),
      );
      if (row) wroteRow(sql, row, tx);
      else wroteSession(sql, id, tx);
      kept.wrote(mark, row);
      const session = row ? toSession(row) : await require(id);
      deps.bus?.publish(id, 'session.updated', { session_id: id, changed: Object.keys(patch) });
      return session;
    },
    async delete(id) {
      const ids = (await deps.family(id)).map((s) => s.id);
      if (ids.length === 0) await require(id);
      // Children and messages (and their search rows) go with it: ON DELETE CASCADE.
      await marked(
        sql,
        id,
        sql.transactionNow(),
        () => sql.run('DELETE FROM sessions WHERE id = $1', [id]),
        ids,
      );
      for (const removed of [id, ...ids]) {
        wroteSession(sql, removed);
        wroteMessages(removed);
      }
      for (const removed of ids) deps.bus?.publish(removed, 'session.deleted', { session_id: removed });
      return ids;
    },
    async addUsage(id, usage) {
      // The row comes back with the UPDATE: the run's next step takes its mode from it (run-stream.ts).
      const mark = kept.mark(id);
      const row = await marked(sql, id, sql.transactionNow(), () =>
        sql.one<SessionRow>(
          'UPDATE sessions SET prompt_tokens = prompt_tokens + $1, completion_tokens = completion_tokens + $2, cost = cost + $3, updated_at = $4 WHERE id = $5 RETURNING *',
          [usage.input_tokens, usage.output_tokens, usage.cost, deps.clock.now(), id],
        ),
      );
      wroteSession(sql, id);
      kept.wrote(mark, row);
      return row ? toSession(row) : undefined;
    },
  };
}
