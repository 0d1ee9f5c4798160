/**
 * What pg does itself at a statement's bind (issue 18 item 6, p-pgvalue): pg's `Connection.bind`
 * (pg-protocol's `serialize.bind`: a `Buffer.byteLength` and a `buffer.write` a parameter, a growing
 * writer) and the arrays its `prepareValue` is given (`arrayString`). svc writes a statement's Bind
 * message itself when its values are ones it writes (src/store/postgres/bind-message.ts), so these
 * counts must fail when that stops.
 * @module
 */
import { createRequire } from 'node:module';

type PrepareValue = (value: unknown) => unknown;
const require = createRequire(import.meta.url);
const pgUtils = require('pg/lib/utils.js') as { prepareValue: PrepareValue };
const pgConnection = require('pg/lib/connection.js') as { prototype: { bind(config: unknown): void } };
const { serialize } = require('pg-protocol/dist/serializer.js') as {
  serialize: { bind(config: { statement?: string; values?: unknown[]; valueMapper?: PrepareValue }): Buffer };
};

/** pg's own array-literal (or other) text of `value`. */
export const pgPrepareValue: PrepareValue = (value) => pgUtils.prepareValue(value);

/** pg-protocol's Bind message for `statement` and `values`, as pg's `Query.prepare` asks it. */
export const pgBindMessage = (statement: string, values: unknown[]): Buffer =>
  serialize.bind({ statement, values, valueMapper: pgUtils.prepareValue });

export type BindCounts = { pgBinds: number; arrays: number };

/** pg's own binds and the arrays its `prepareValue` is given while `fn` runs. */
export async function bindCountsOf(fn: () => Promise<unknown>): Promise<BindCounts> {
  const counts: BindCounts = { pgBinds: 0, arrays: 0 };
  const prepareValue = pgUtils.prepareValue;
  const bind = pgConnection.prototype.bind;
  pgUtils.prepareValue = (value: unknown) => {
    if (Array.isArray(value)) counts.arrays++;
    return prepareValue(value);
  };
  pgConnection.prototype.bind = function (this: unknown, config: unknown) {
    counts.pgBinds++;
    return bind.call(this, config);
  };
  try {
    await fn();
  } finally {
    pgUtils.prepareValue = prepareValue;
    pgConnection.prototype.bind = bind;
  }
  return counts;
}
