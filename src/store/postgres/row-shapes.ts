/**
 * Rows of a statement's answer built by svc, not by pg's `Result` (issue 18, item 6). pg builds,
 * for every statement that answers rows, an empty row as a dictionary-mode object
 * (`Object.create(null)`) and a spread of it, looks every column's type parser up again, and then
 * makes each row a spread of that object filled by keyed stores (`Result.addFields`, `parseRow`:
 * ≈ 0.15 ms and much of the garbage of a compat request, docs/performance-log.md). Here a statement's
 * shape (its columns' names and types, as the server describes them) is kept per statement text:
 * the parsers are looked up once, and its rows are made by a function built once per shape that
 * returns an object literal, so every row of a shape has the same hidden class from its first
 * key. Same rows: the columns' values parsed by the same parsers (the pool's types), a column
 * named twice keeps its last value in its first place, as pg's; `result.fields` is the server's
 * description as before. A description this cannot build (a binary column, a column named
 * `__proto__`) goes through pg's own path. The statement is a subclass of pg's `Query` (so pg's
 * pipeline mode takes it) overriding its row handlers, and its Bind message built by svc
 * (./bind-message.ts: pg's bytes in one buffer) when its values are ones svc writes.
 * @module
 */
import type { FieldDef, Query } from 'pg';
import { bindMessage } from './bind-message';
import { isStalePlan, type NamedConnection, type PreparedNames } from './prepared-names';

/** A column's text to its value (pg-types' parsers and the pool's own). */
type Parser = (value: string) => unknown;
type Row = Record<string, unknown>;
/** One row from its columns' texts (null for SQL NULL) and its shape's parsers. */
type Build = (values: (string | null)[], parsers: Parser[]) => Row;

interface Shape {
  names: string[];
  types: number[];
  parsers: Parser[];
  build: Build;
}

/** What a statement needs of pg's types (the pool's `types`, ./client.ts's `poolConfig`). */
export interface TypeParsers {
  getTypeParser(oid: number, format?: 'text' | 'binary'): Parser;
}

/** The parts of pg's `Query` (lib/query.js) this subclass uses; not in pg's types. */
interface QueryInternals {
  text: string;
  name?: string;
  values?: unknown[];
  portal?: string;
  binary?: boolean;
  rows?: number;
  types?: unknown;
  hasBeenParsed(connection: NamedConnection): boolean;
  _getRows(connection: NamedConnection, rows: number | undefined): void;
  _result: {
    fields: FieldDef[];
    rows: Row[];
    _types?: TypeParsers;
    addFields(fields: FieldDef[]): void;
  };
  _accumulateRows: boolean;
  _canceledDueToError: unknown;
  _checkForMultirow(): void;
  handleRowDescription(message: { fields: FieldDef[] }): void;
  handleDataRow(message: { fields: (string | null)[] }): void;
  handleError(error: Error, connection: NamedConnection): void;
  prepare(connection: NamedConnection): void;
}

/** pg's `Query` with svc's rows; its callback is given to `client.query` or `pool.query`. */
export type StatementClass = new (text: string, values?: unknown[]) => Query;

/** Most statement texts whose shape is kept; past it the cache starts again (texts built per call). */
const MAX_SHAPES = 512;

/**
 * pg's `Query` with svc's rows: `new Statement(text, values)` goes to `client.query` (or
 * `pool.query`) with its callback, as pg's own would. `types`: the parsers rows are built with when
 * the connection gives none. `names`: a statement with parameters goes under the name these give
 * it, if any (./prepared-names.ts: parsed once a connection).
 */
export function statementClass(
  QueryClass: typeof Query,
  types: TypeParsers,
  names?: PreparedNames,
): StatementClass {
  const shapes = new Map<string, Shape>();
  const Base = QueryClass as unknown as new (...args: unknown[]) => QueryInternals;
  class Statement extends Base {
    private shape: Shape | undefined;
    constructor(text: string, values?: unknown[]) {
      super(text, values);
      if (names && values && values.length > 0) this.name = names.nameOf(text);
    }
    override prepare(connection: NamedConnection): void {
      if (names) {
        // Evicted or retired while it waited for a connection: unnamed, no statement left behind.
        if (this.name && !names.isKept(this.name)) this.name = undefined;
        names.closeRetired(connection);
      }
      const bind =
        this.values?.length && !this.portal && !this.binary ? svcBind(this, connection) : undefined;
      if (!bind) {
        super.prepare(connection);
        return;
      }
      // pg's `prepare` (lib/query.js) with svc's Bind message in place of pg-protocol's.
      const wire = connection as WireConnection;
      if (!this.hasBeenParsed(connection)) {
        wire.parse({ text: this.text, name: this.name, types: this.types });
        if (this.name && connection.submittedNamedStatements)
          connection.submittedNamedStatements[this.name] = this.text;
      }
      wire._send(bind);
      wire.describe({ type: 'P', name: '' });
      this._getRows(connection, this.rows);
    }
    override handleError(error: Error, connection: NamedConnection): void {
      if (this.name && isStalePlan(error)) names?.retire(this.name);
      super.handleError(error, connection);
    }
    override handleRowDescription(message: { fields: FieldDef[] }): void {
      this._checkForMultirow();
      const result = this._result;
      const shape = shapeOf(shapes, this.text, message.fields, result._types ?? types);
      this.shape = shape;
      if (shape) result.fields = message.fields;
      else result.addFields(message.fields);
      this._accumulateRows = true;
    }
    override handleDataRow(message: { fields: (string | null)[] }): void {
      const shape = this.shape;
      if (!shape) {
        super.handleDataRow(message);
        return;
      }
      if (this._canceledDueToError) return;
      let row: Row;
      try {
        row = shape.build(message.fields, shape.parsers);
      } catch (error) {
        this._canceledDueToError = error;
        return;
      }
      this._result.rows.push(row);
    }
  }
  return Statement as unknown as StatementClass;
}

/** The parts of pg's `Connection` (lib/connection.js) a statement's own Bind is written with. */
interface WireConnection extends NamedConnection {
  parse(message: { text: string; name?: string; types?: unknown }): void;
  describe(message: { type: 'P'; name: string }): void;
  _send(buffer: Buffer): unknown;
}

/** The statement's Bind message built by svc (./bind-message.ts), or undefined: pg's own bind. */
function svcBind(statement: QueryInternals, connection: NamedConnection): Buffer | undefined {
  const wire = connection as Partial<WireConnection>;
  if (
    typeof wire._send !== 'function' ||
    typeof wire.parse !== 'function' ||
    typeof wire.describe !== 'function'
  )
    return undefined;
  return bindMessage(statement.name ?? '', statement.values ?? []);
}

/** The statement's shape for this description: the kept one when it still matches, else a new one. */
function shapeOf(
  shapes: Map<string, Shape>,
  text: string,
  fields: FieldDef[],
  types: TypeParsers,
): Shape | undefined {
  const kept = shapes.get(text);
  if (kept && matches(kept, fields)) return kept;
  const shape = newShape(fields, types);
  if (!shape) return undefined;
  if (!kept && shapes.size >= MAX_SHAPES) shapes.clear();
  shapes.set(text, shape);
  return shape;
}

function matches(shape: Shape, fields: FieldDef[]): boolean {
  const { names, types } = shape;
  if (names.length !== fields.length) return false;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
    if (field.name !== names[i] || field.dataTypeID !== types[i]) return false;
  }
  return true;
}

function newShape(fields: FieldDef[], types: TypeParsers): Shape | undefined {
  const names: string[] = [];
  const oids: number[] = [];
  const parsers: Parser[] = [];
  const entries = new Map<string, string>();
  // pg-types' parser of a type it has none for (oid 0 is no type): the text as it is (text, varchar).
  const unparsed = types.getTypeParser(0, 'text');
  for (let i = 0; i < fields.length; i++) {
    const { name, dataTypeID, format } = fields[i];
    if ((format && format !== 'text') || name === '__proto__') return undefined;
    names.push(name);
    oids.push(dataTypeID);
    const parser = types.getTypeParser(dataTypeID, 'text');
    parsers.push(parser);
    const value = parser === unparsed ? `v[${i}]` : `(v[${i}] === null ? null : p[${i}](v[${i}]))`;
    // A later column of the same name overwrites an earlier one's value in its first place (as pg).
    entries.set(name, value);
  }
  const body = [...entries].map(([name, value]) => `${JSON.stringify(name)}: ${value}`).join(', ');
  // The shape's own literal: one hidden class for every row of it. The keys are JSON string
  // literals of the server's column names, never values.
  const build = new Function('v', 'p', `return { ${body} };`) as Build;
  return { names, types: oids, parsers, build };
}
