/**
 * Sessions and their messages in svc.db. Messages are typed parts stored as JSON.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import { type Db, groupCommit } from '../store/db';
import { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';

export type MessageRole = 'user' | 'assistant' | 'system' | 'tool';

/** Provider data that must go back with a part on later turns (e.g. reasoning signatures). */
export type ProviderMetadata = Record<string, Record<string, unknown>>;

export type MessagePart =
  | { type: 'text'; text: string; provider_metadata?: ProviderMetadata }
  | { type: 'reasoning'; text: string; provider_metadata?: ProviderMetadata }
  | {
      type: 'tool-call';
      tool_call_id: string;
      tool: string;
      input: unknown;
      provider_metadata?: ProviderMetadata;
    }
  | { type: 'tool-result'; tool_call_id: string; tool: string; output: unknown; is_error?: boolean }
  | { type: 'file'; path?: string; media_type: string; data?: string; url?: string }
  | { type: 'error'; message: string; code?: string };

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens?: number;
  cached_input_tokens?: number;
}

export interface Session {
  id: string;
  parent_id: string | null;
  title: string;
  mode: string;
  agent: string;
  model: string | null;
  reasoning_effort: string | null;
  workspace: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  metadata: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

export interface Message {
  id: string;
  session_id: string;
  role: MessageRole;
  parts: MessagePart[];
  model: string | null;
  provider: string | null;
  usage: Usage | null;
  cost: number;
  run_id: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface CreateSessionInput {
  title?: string;
  parent_id?: string | null;
  mode?: string;
  agent?: string;
  model?: string | null;
  metadata?: Record<string, unknown>;
}

export interface SessionPatch {
  title?: string;
  mode?: string;
  agent?: string;
  model?: string | null;
  reasoning_effort?: string | null;
  metadata?: Record<string, unknown>;
}

export interface SessionStore {
  create(input?: CreateSessionInput): Session;
  get(id: string): Session | undefined;
  /** Like get, but a not_found SvcError naming the id. */
  require(id: string): Session;
  list(options?: { limit?: number; parent_id?: string | null; offset?: number }): Session[];
  /** The session and every descendant, parents first. */
  family(rootId: string): Session[];
  /** The id of the family's root session (the session itself when it has no parent). */
  root(id: string): string;
  update(id: string, patch: SessionPatch): Session;
  /** Deletes the session with its children and messages; returns the ids removed. */
  delete(id: string): string[];
  search(query: string, options?: { limit?: number }): { session: Session; snippet: string }[];
  addUsage(id: string, usage: { input_tokens: number; output_tokens: number; cost: number }): void;

  appendMessage(input: {
    session_id: string;
    role: MessageRole;
    parts: MessagePart[];
    model?: string | null;
    provider?: string | null;
    usage?: Usage | null;
    cost?: number;
    run_id?: string | null;
    finished?: boolean;
  }): Message;
  updateMessage(
    id: string,
    patch: { parts?: MessagePart[]; usage?: Usage | null; cost?: number; finished?: boolean },
  ): Message;
  getMessage(id: string): Message | undefined;
  messages(sessionId: string, options?: { limit?: number; after?: string }): Message[];
  deleteMessage(id: string): void;
  /** Messages stored for the session. */
  messageCount(sessionId: string): number;
  count(): number;
}

interface SessionRow extends Omit<Session, 'metadata'> {
  metadata: string;
}
interface MessageRow extends Omit<Message, 'parts' | 'usage'> {
  parts: string;
  usage: string | null;
}

export function createSessionStore(deps: {
  db: () => Db;
  clock: Clock;
  ids: Ids;
  bus?: EventBus;
  workspace: string;
}): SessionStore {
  const db = deps.db;
  const sql = statementCache(db);
  const toSession = (row: SessionRow): Session => ({ ...row, metadata: JSON.parse(row.metadata) });
  const toMessage = (row: MessageRow): Message => ({
    ...row,
    parts: JSON.parse(row.parts),
    usage: row.usage ? JSON.parse(row.usage) : null,
  });
  const get = (id: string) => {
    const row = sql('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
    return row ? toSession(row) : undefined;
  };
  const require = (id: string) => {
    const s = get(id);
    if (!s) throw new SvcError('not_found', `session_id: no session "${id}"; see svc session list`);
    return s;
  };
  const getMessage = (id: string) => {
    const row = sql('SELECT * FROM messages WHERE id = ?').get(id) as MessageRow | undefined;
    return row ? toMessage(row) : undefined;
  };
  const family = (rootId: string): Session[] => {
    const rows = sql(
      `WITH RECURSIVE fam(id, depth) AS (SELECT id, 0 FROM sessions WHERE id = ?
           UNION ALL SELECT s.id, fam.depth + 1 FROM sessions s JOIN fam ON s.parent_id = fam.id)
         SELECT s.* FROM sessions s JOIN fam ON s.id = fam.id ORDER BY fam.depth, s.created_at`,
    ).all(rootId) as SessionRow[];
    return rows.map(toSession);
  };

  return {
    create(input = {}) {
      const now = deps.clock.now();
      if (input.parent_id) require(input.parent_id);
      const id = deps.ids.next('ses');
      sql(
        `INSERT INTO sessions (id, parent_id, title, mode, agent, model, workspace, metadata, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        input.parent_id ?? null,
        input.title ?? '',
        input.mode ?? 'build',
        input.agent ?? 'build',
        input.model ?? null,
        deps.workspace,
        JSON.stringify(input.metadata ?? {}),
        now,
        now,
      );
      const session = require(id);
      deps.bus?.publish(id, 'session.created', {
        session_id: id,
        parent_id: session.parent_id,
        title: session.title,
      });
      return session;
    },
    get,
    require,
    list(options = {}) {
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
    family,
    root(id) {
      const row = sql(
        `WITH RECURSIVE up(id, parent_id, depth) AS (SELECT id, parent_id, 0 FROM sessions WHERE id = ?
             UNION ALL SELECT s.id, s.parent_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent_id WHERE up.depth < 64)
           SELECT id FROM up ORDER BY depth DESC LIMIT 1`,
      ).get(id) as { id: string } | undefined;
      return row?.id ?? id;
    },
    update(id, patch) {
      const current = require(id);
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
      const session = require(id);
      deps.bus?.publish(id, 'session.updated', { session_id: id, changed: Object.keys(patch) });
      return session;
    },
    delete(id) {
      const ids = family(id).map((s) => s.id);
      if (ids.length === 0) require(id);
      sql('DELETE FROM sessions WHERE id = ?').run(id);
      for (const removed of ids) deps.bus?.publish(removed, 'session.deleted', { session_id: removed });
      return ids;
    },
    search(query, options = {}) {
      const like = `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const rows = sql(
        `SELECT s.*, (SELECT m.parts FROM messages m WHERE m.session_id = s.id AND m.parts LIKE ? ESCAPE '\\'
                         ORDER BY m.created_at DESC LIMIT 1) AS hit
           FROM sessions s
           WHERE s.title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.parts LIKE ? ESCAPE '\\')
           ORDER BY s.updated_at DESC LIMIT ?`,
      ).all(like, like, like, options.limit ?? 20) as (SessionRow & { hit: string | null })[];
      return rows.map(({ hit, ...row }) => ({
        session: toSession(row),
        snippet: snippetOf(hit, row.title, query),
      }));
    },
    addUsage(id, usage) {
      groupCommit(db());
      sql(
        'UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, cost = cost + ?, updated_at = ? WHERE id = ?',
      ).run(usage.input_tokens, usage.output_tokens, usage.cost, deps.clock.now(), id);
    },
    appendMessage(input) {
      groupCommit(db());
      const now = deps.clock.now();
      // The session must exist; checked by the UPDATE below (one statement instead of a read).
      if (sql('UPDATE sessions SET updated_at = ? WHERE id = ?').run(now, input.session_id).changes === 0) {
        require(input.session_id);
      }
      const id = deps.ids.next('msg');
      const partsJson = JSON.stringify(input.parts);
      sql(
        `INSERT INTO messages (id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        input.session_id,
        input.role,
        partsJson,
        input.model ?? null,
        input.provider ?? null,
        input.usage ? JSON.stringify(input.usage) : null,
        input.cost ?? 0,
        input.run_id ?? null,
        now,
        now,
        input.finished === false ? null : now,
      );
      return {
        id,
        session_id: input.session_id,
        role: input.role,
        // A copy, as a read would return: the caller's array stays its own.
        parts: JSON.parse(partsJson) as MessagePart[],
        model: input.model ?? null,
        provider: input.provider ?? null,
        usage: input.usage ? { ...input.usage } : null,
        cost: input.cost ?? 0,
        run_id: input.run_id ?? null,
        created_at: now,
        updated_at: now,
        finished_at: input.finished === false ? null : now,
      };
    },
    updateMessage(id, patch) {
      groupCommit(db());
      const now = deps.clock.now();
      // One statement: fields left out of the patch keep their stored value.
      const changed = sql(
        `UPDATE messages SET parts = coalesce(?, parts), usage = CASE WHEN ? THEN ? ELSE usage END,
           cost = coalesce(?, cost), updated_at = ?, finished_at = CASE WHEN ? THEN ? ELSE finished_at END
         WHERE id = ?`,
      ).run(
        patch.parts ? JSON.stringify(patch.parts) : null,
        patch.usage === undefined ? 0 : 1,
        patch.usage ? JSON.stringify(patch.usage) : null,
        patch.cost ?? null,
        now,
        patch.finished ? 1 : 0,
        now,
        id,
      ).changes;
      if (changed === 0) throw new SvcError('not_found', `message_id: no message "${id}"`);
      return getMessage(id)!;
    },
    getMessage,
    messages(sessionId, options = {}) {
      const rows = sql('SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid').all(
        sessionId,
      ) as MessageRow[];
      let list = rows.map(toMessage);
      if (options.after) {
        const index = list.findIndex((m) => m.id === options.after);
        list = index === -1 ? list : list.slice(index + 1);
      }
      return options.limit ? list.slice(-options.limit) : list;
    },
    deleteMessage(id) {
      const result = sql('DELETE FROM messages WHERE id = ?').run(id);
      if (result.changes === 0) throw new SvcError('not_found', `message_id: no message "${id}"`);
    },
    messageCount(sessionId) {
      return (
        sql('SELECT count(*) AS n FROM messages WHERE session_id = ?').get(sessionId) as {
          n: number;
        }
      ).n;
    },
    count() {
      return (sql('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
    },
  };
}

function snippetOf(parts: string | null, title: string, query: string): string {
  const text = parts
    ? (JSON.parse(parts) as MessagePart[]).map((p) => ('text' in p ? p.text : '')).join(' ')
    : title;
  const index = text.toLowerCase().indexOf(query.toLowerCase());
  if (index === -1) return text.slice(0, 120);
  return text.slice(Math.max(0, index - 40), index + query.length + 80);
}
