/**
 * One row of a wide table read through its values. better-sqlite3 builds a row object column by
 * column; V8 turns an object built that way into a dictionary past 16 properties (`agent_runs`
 * has 28 columns: ≈ 3 KB of hash table a row, and slower reads of it after). Read as an array
 * (`raw`) and filled into a copy of a template of the statement's columns (made by `JSON.parse`,
 * which gives fast properties), the same row is one array and one object of ≈ 0.5 KB together.
 * @module
 */
import type { Statement } from 'better-sqlite3';

interface RowShape {
  columns: string[];
  template: Record<string, unknown>;
}

const shapes = new WeakMap<Statement, RowShape>();

/**
 * `statement.get(...params)`: the same keys in the same order, the same values. The statement is
 * put back to objects before this returns, so a cached statement is never left in another mode
 * (./db.ts `cacheStatements`).
 */
export function getWideRow<Row>(statement: Statement, params: unknown[]): Row | undefined {
  const values = rawValues(statement, params);
  return values && (filled(statement, values, 0) as Row);
}

/**
 * `getWideRow` of a statement whose last column is not the row's (`RETURNING *, <expr>`): the row
 * of the columns before it, as `getWideRow` reads it, and that last value.
 */
export function getWideRowAnd<Row>(
  statement: Statement,
  params: unknown[],
): { row: Row; last: unknown } | undefined {
  const values = rawValues(statement, params);
  if (!values) return undefined;
  return { row: filled(statement, values, 1) as Row, last: values[values.length - 1] };
}

/** The statement's one answer as an array (`raw`), the statement put back to objects after. */
export function rawValues(statement: Statement, params: unknown[]): unknown[] | undefined {
  try {
    return statement.raw(true).get(...params) as unknown[] | undefined;
  } finally {
    statement.raw(false);
  }
}

/** A copy of the statement's template (its columns less the last `trailing`) filled with `values`. */
function filled(statement: Statement, values: unknown[], trailing: number): Record<string, unknown> {
  const { columns, template } = shapeOf(statement, trailing);
  const row: Record<string, unknown> = { ...template };
  for (let i = 0; i < columns.length; i++) row[columns[i] as string] = values[i];
  return row;
}

/** The statement's columns (less its last `trailing`) and their template, made once. */
function shapeOf(statement: Statement, trailing = 0): RowShape {
  let shape = shapes.get(statement);
  if (!shape) {
    const all = statement.columns().map((column) => column.name);
    const columns = trailing ? all.slice(0, all.length - trailing) : all;
    shape = { columns, template: fastTemplate(columns) };
    shapes.set(statement, shape);
  }
  return shape;
}

/**
 * An object of `keys` (each null) with fast properties, to copy and fill in: made by `JSON.parse`,
 * which builds it with fast properties whatever its size, where adding the keys one by one to `{}`
 * turns it into a dictionary past 16.
 */
export function fastTemplate(keys: readonly string[]): Record<string, unknown> {
  const object: Record<string, null> = {};
  for (const key of keys) object[key] = null;
  return JSON.parse(JSON.stringify(object)) as Record<string, unknown>;
}
