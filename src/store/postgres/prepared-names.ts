/**
 * Named prepared statements (issue 18, item 6, p-pgprep). An unnamed statement is parsed and
 * planned by the server on every call: ≈ 0.4 ms of parse and plan a statement of an agent-loop
 * step (docs/performance-log.md, p-pgwall). A statement text sent a second time gets a name
 * (`svc_p1`, `svc_p2`, …; pg's `Query` with a `name`): each connection parses it once (pg keeps
 * which names a connection has, `parsedStatements`) and then sends only Bind and Execute, and the
 * server's plan cache may keep its plan (a generic plan after five custom ones when it is not
 * dearer, PostgreSQL's `plan_cache_mode = auto`).
 *
 * Bounded by use (p-pgprep2): at most `MAX_NAMED` texts are named at once, least recently used
 * evicted first (its last use a tick, no reordering at each use); a connection closes the
 * statements of evicted texts (a Close message before its next statement's, no round trip of its
 * own), so a long-lived process whose texts change keeps its current ones named and the server at
 * most that many statements a connection. Texts built per call that never come again (a VALUES
 * list of one length) are seen once and stay unnamed.
 *
 * A kept statement whose result columns changed (another node's migration added a column to a
 * table it reads with `*`) fails once with "cached plan must not change result type": every name
 * is retired (a schema changed; the other kept texts may be stale too: each is seen again from the
 * start and named anew), each connection closes the retired statements, the pool's statement is
 * sent once more (`againIfStale`, ./pool-batches.ts), and a transaction's is sent again after its
 * transaction is replayed (./stale-replay.ts).
 *
 * Plans: `plan_cache_mode` stays `auto` (no `force_generic_plan`): after five custom plans the
 * server keeps a generic plan only when its estimated cost is not above the custom plans' average
 * (PostgreSQL's rule for every prepared statement, as with JDBC's or pgx's), so a read whose plan
 * depends on a parameter's value (`status = $1`, `LIMIT $2`, `ILIKE $1`) is not forced onto one.
 * @module
 */

/** The parts of pg's connection (lib/connection.js) this module uses; not in pg's types. */
export interface NamedConnection {
  parsedStatements: Record<string, string | undefined>;
  /** Named statements written and not yet answered (pg ≥ 8.16's pipeline bookkeeping). */
  submittedNamedStatements?: Record<string, string | undefined>;
  close(message: { type: 'S'; name: string }): void;
  /** The names' generation when this connection last closed the ones no longer kept. */
  svcNamesSeen?: number;
}

export interface PreparedNames {
  /** The name to send `text` under, undefined to send it unnamed (seen once so far). */
  nameOf(text: string): string | undefined;
  /** Whether `name` is still kept (not evicted nor retired since it was given). */
  isKept(name: string): boolean;
  /**
   * `name` failed with a changed result type: a schema changed under the connection's plans, so
   * every kept name is retired (each text is seen anew and named afresh), not `name`'s alone.
   * A name retired already (a second failure of the same change) retires nothing more.
   */
  retire(name: string): void;
  /** The statements `connection` holds that are no longer kept closed (Close messages, in the write to come). */
  closeRetired(connection: NamedConnection): void;
}

/** Most texts named at once in one process (so most statements a connection keeps). */
export const MAX_NAMED = 256;
/** Texts seen once kept at most; past it the set starts again. */
const MAX_SEEN = 1024;
const PREFIX = 'svc_p';

/** The process's names, none (every statement unnamed, as before) with `SVC_PG_PREPARED=0`. */
export function preparedNamesOf(env: NodeJS.ProcessEnv): PreparedNames | undefined {
  return env.SVC_PG_PREPARED === '0' ? undefined : preparedNames();
}

/**
 * Names kept with the tick of their text's last use: a text named past `maxNamed` evicts the one
 * used longest ago (a scan of the kept texts, only then; a use is a property write). `generation`
 * moves at each eviction or retirement; a connection whose last look is older closes what it
 * holds that is no longer kept (at most the bound plus those in flight), so the server's
 * statements are bounded as the names are.
 */
export function preparedNames(maxNamed = MAX_NAMED): PreparedNames {
  const named = new Map<string, { name: string; used: number }>();
  const kept = new Set<string>();
  const seen = new Set<string>();
  let next = 0;
  let tick = 0;
  let generation = 0;
  const evictOldest = () => {
    let oldest: string | undefined;
    let oldestUse = Number.POSITIVE_INFINITY;
    for (const [text, { used }] of named) {
      if (used < oldestUse) {
        oldest = text;
        oldestUse = used;
      }
    }
    if (oldest === undefined) return;
    kept.delete((named.get(oldest) as { name: string }).name);
    named.delete(oldest);
    generation++;
  };
  return {
    nameOf(text) {
      const entry = named.get(text);
      if (entry !== undefined) {
        entry.used = ++tick;
        return entry.name;
      }
      if (!seen.has(text)) {
        if (seen.size >= MAX_SEEN) seen.clear();
        seen.add(text);
        return undefined;
      }
      seen.delete(text);
      if (named.size >= maxNamed) evictOldest();
      const name = `${PREFIX}${++next}`;
      named.set(text, { name, used: ++tick });
      kept.add(name);
      return name;
    },
    isKept: (name) => kept.has(name),
    retire(name) {
      if (!kept.has(name)) return;
      named.clear();
      kept.clear();
      generation++;
    },
    closeRetired(connection) {
      if ((connection.svcNamesSeen ?? 0) === generation) return;
      connection.svcNamesSeen = generation;
      closeUnkept(connection, connection.parsedStatements, kept);
      if (connection.submittedNamedStatements)
        closeUnkept(connection, connection.submittedNamedStatements, kept);
    },
  };
}

/** `connection`'s statements in `statements` whose names are not kept: closed, forgotten by pg. */
function closeUnkept(
  connection: NamedConnection,
  statements: Record<string, string | undefined>,
  kept: Set<string>,
): void {
  for (const name in statements) {
    if (!name.startsWith(PREFIX) || kept.has(name)) continue;
    connection.close({ type: 'S', name });
    delete statements[name];
  }
}

/** The server's answer to a kept statement whose result columns changed since it was parsed. */
export function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === '0A000' &&
    typeof message === 'string' &&
    message.includes('cached plan must not change result type')
  );
}
