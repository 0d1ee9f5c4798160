/**
 * Named prepared statements (issue 18, item 6, p-pgprep). An unnamed statement is parsed and
 * planned by the server on every call: ≈ 0.4 ms of parse and plan a statement of an agent-loop
 * step (docs/performance.md, p-pgwall). A statement text sent a second time gets a name
 * (`svc_p1`, `svc_p2`, …; pg's `Query` with a `name`): each connection parses it once (pg keeps
 * which names a connection has, `parsedStatements`) and then sends only Bind and Execute, and the
 * server's plan cache may keep its plan (a generic plan after five custom ones when it is not
 * dearer, PostgreSQL's `plan_cache_mode = auto`).
 *
 * Bounded: at most `MAX_NAMED` texts are named in a process, so a connection holds at most that
 * many statements; texts built per call that never come again (a VALUES list of one length) are
 * seen once and stay unnamed, and past the bound a new text goes unnamed as before.
 *
 * A kept statement whose result columns changed (another node's migration added a column to a
 * table it reads with `*`) fails once with "cached plan must not change result type": its name is
 * retired (the text is seen again from the start and named anew), each connection closes the
 * retired statement (a Close message before its next Parse), and the pool's statement is sent
 * once more (`againIfStale`, ./pool-batches.ts). A statement of a transaction cannot be sent
 * again (its transaction is aborted): that transaction fails, the next one does not.
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
  close(message: { type: 'S'; name: string }): void;
  /** How many names this module had retired when this connection last closed them. */
  svcRetiredSeen?: number;
}

export interface PreparedNames {
  /** The name to send `text` under, undefined to send it unnamed (seen once, or past the bound). */
  nameOf(text: string): string | undefined;
  /** `name` failed with a changed result type: its text gets a new name, its statements are closed. */
  retire(name: string): void;
  /** The retired statements `connection` still holds closed (Close messages, in the write to come). */
  closeRetired(connection: NamedConnection): void;
}

/** Most texts named in one process (so most statements a connection keeps). */
export const MAX_NAMED = 256;
/** Texts seen once kept at most; past it the set starts again. */
const MAX_SEEN = 1024;

/** The process's names, none (every statement unnamed, as before) with `SVC_PG_PREPARED=0`. */
export function preparedNamesOf(env: NodeJS.ProcessEnv): PreparedNames | undefined {
  return env.SVC_PG_PREPARED === '0' ? undefined : preparedNames();
}

export function preparedNames(maxNamed = MAX_NAMED): PreparedNames {
  const named = new Map<string, string>();
  const seen = new Set<string>();
  const retired: string[] = [];
  let next = 0;
  return {
    nameOf(text) {
      const name = named.get(text);
      if (name !== undefined || named.size >= maxNamed) return name;
      if (!seen.has(text)) {
        if (seen.size >= MAX_SEEN) seen.clear();
        seen.add(text);
        return undefined;
      }
      seen.delete(text);
      const fresh = `svc_p${++next}`;
      named.set(text, fresh);
      return fresh;
    },
    retire(name) {
      for (const [text, kept] of named) {
        if (kept !== name) continue;
        named.delete(text);
        retired.push(name);
        return;
      }
    },
    closeRetired(connection) {
      if ((connection.svcRetiredSeen ?? 0) === retired.length) return;
      for (let i = connection.svcRetiredSeen ?? 0; i < retired.length; i++) {
        const name = retired[i];
        if (connection.parsedStatements[name] === undefined) continue;
        connection.close({ type: 'S', name });
        delete connection.parsedStatements[name];
      }
      connection.svcRetiredSeen = retired.length;
    },
  };
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
