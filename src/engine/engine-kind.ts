/**
 * Which run engine a config selects, checked at start-up before any store is opened (issue 19):
 * `in-process` runs on either store; `dbos` needs the PostgreSQL store. docs/engine.md.
 * @module
 */
import type { EngineConfig } from '../config/schema';
import { SvcError } from '../errors';

export type EngineKind = EngineConfig['kind'];

/** The engine kind to build, or a `config_error` SvcError that names the problem and the fix. */
export function checkEngineKind(kind: EngineKind, store: 'sqlite' | 'postgres'): EngineKind {
  switch (kind) {
    case 'in-process':
      return kind;
    case 'dbos':
      if (store === 'sqlite') {
        throw new SvcError(
          'config_error',
          '[engine] kind = "dbos" needs the PostgreSQL store, and [store] is the SQLite file: set [store] url to a postgres:// URL (or SVC_STORE_URL), or set [engine] kind = "in-process"',
          { details: { engine: kind, store } },
        );
      }
      return kind;
    default: {
      const never: never = kind;
      throw new SvcError('config_error', `[engine] kind: unknown engine "${String(never)}"`);
    }
  }
}
