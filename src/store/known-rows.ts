/**
 * A SQLite table's fixed columns known beyond the statement that wrote or read them (issue 17 item
 * 3: p-sqlrow for `agent_runs`, p-sqlusage for `sessions`): an UPDATE that answers the row returns
 * only the columns some writer may change, when this process holds a row of that id (one it
 * inserted or read whole), where `RETURNING *` read every column back. The answer is the table's
 * row in its column order: the fixed columns from the held row, a column the UPDATE sets to a plain
 * parameter (`column = ?`) from that parameter, every other column from the statement's answer.
 *
 * "Fixed" is the caller's claim, argued in its module: a column no UPDATE of the table sets, which
 * holds for as long as the row exists whoever writes the others (another connection, another
 * process, a transaction rolled back or not), given that an id is never used again (a ULID), a row
 * this process deletes is forgotten, and a row that is gone answers nothing, as `RETURNING *` did.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { recentMap } from '../util/recent-map';
import { fastTemplate, getWideRow, getWideRowAnd, rawValues } from './wide-row';

export interface KnownRows<R> {
  /** Holds the row's fixed columns (a whole row this process inserted or read); answers the row. */
  keep<T extends R | undefined>(row: T): T;
  /** The row was deleted by this process. */
  forget(id: string): void;
  /**
   * `text` (`UPDATE … SET <sets> WHERE id = ?`, `params` the values of its `?` before the id's)
   * answering the row: returning only the columns neither fixed nor set to a parameter when the
   * row's fixed columns are held, else `RETURNING *` (the row then held); undefined when there is
   * no such row.
   */
  update(id: string, text: string, params: unknown[]): R | undefined;
  /** `update` with one more `RETURNING` expression, whose value is answered as `last`. */
  updateWith(
    id: string,
    text: string,
    params: unknown[],
    extra: string,
  ): { row: R; last: unknown } | undefined;
}

/** What an UPDATE text sets from its parameters and answers; one a text (and extra), made once. */
interface UpdateShape {
  /** The statement with its `RETURNING` of a held row. */
  full: string;
  /** The statement returning `*` (and the extra expression), for a row not held. */
  whole: string;
  /** Columns set to a plain parameter, and that parameter's index. */
  patched: string[];
  patchedAt: number[];
  /** Columns the statement returns, in its `RETURNING` order. */
  answered: string[];
}

/** `columns`: the table's columns in their order (`SELECT *`); `fixed`: those no UPDATE sets. */
export function knownRows<R extends { id: string }>(
  columns: readonly string[],
  fixed: readonly string[],
  prepare: (text: string) => Statement,
): KnownRows<R> {
  // id → a row holding its fixed columns, the last 256 kept (a run's or a compat request's start
  // to its finish is what it serves; a row read again after it was dropped is held again).
  const held = recentMap<Record<string, unknown>>(256);
  const template = fastTemplate(columns);
  // `text` or `text\0extra` → its shape.
  const shapes = new Map<string, UpdateShape>();
  const shapeOf = (text: string, extra: string | undefined): UpdateShape => {
    const key = extra === undefined ? text : `${text}\0${extra}`;
    let shape = shapes.get(key);
    if (!shape) {
      shape = updateShape(text, columns, fixed, extra);
      shapes.set(key, shape);
    }
    return shape;
  };
  // A held row: its fixed columns, its plain sets and the columns read back, in the table's order.
  const heldAnswer = (known: Record<string, unknown>, shape: UpdateShape, params: unknown[], id: string) => {
    const { full, patched, patchedAt, answered } = shape;
    const values = rawValues(prepare(full), [...params, id]);
    if (!values) return undefined;
    // A copy of the template (fast properties, the table's key order), filled.
    const row: Record<string, unknown> = { ...template };
    for (const column of fixed) row[column] = known[column];
    for (let i = 0; i < patched.length; i++) row[patched[i] as string] = params[patchedAt[i] as number];
    for (let i = 0; i < answered.length; i++) row[answered[i] as string] = values[i];
    return { row: row as unknown as R, last: values[answered.length] };
  };
  const keep = <T extends R | undefined>(row: T): T => {
    // A held row's fixed columns are this one's: nothing to set (a set would also take a slot).
    if (row && !held.get(row.id)) held.set(row.id, row as unknown as Record<string, unknown>);
    return row;
  };
  return {
    keep,
    forget: (id) => held.delete(id),
    update(id, text, params) {
      const shape = shapeOf(text, undefined);
      const known = held.get(id);
      if (known) return heldAnswer(known, shape, params, id)?.row;
      return keep(getWideRow<R>(prepare(shape.whole), [...params, id]));
    },
    updateWith(id, text, params, extra) {
      const shape = shapeOf(text, extra);
      const known = held.get(id);
      if (known) return heldAnswer(known, shape, params, id);
      const answer = getWideRowAnd<R>(prepare(shape.whole), [...params, id]);
      return answer && { row: keep(answer.row), last: answer.last };
    },
  };
}

/**
 * The shape of `UPDATE … SET <sets> WHERE id = ?`: each set item `column = ?` is patched from its
 * parameter; an item with any other value (`cost = cost + ?`) is answered like the columns not set.
 */
function updateShape(
  text: string,
  columns: readonly string[],
  fixed: readonly string[],
  extra: string | undefined,
): UpdateShape {
  const sets = text.slice(text.indexOf(' SET ') + 5, text.lastIndexOf(' WHERE '));
  const patched: string[] = [];
  const patchedAt: number[] = [];
  let param = 0;
  for (const item of topLevelItems(sets)) {
    const plain = /^(\w+) = \?$/.exec(item);
    if (plain) {
      patched.push(plain[1] as string);
      patchedAt.push(param);
    }
    param += item.split('?').length - 1;
  }
  const answered = columns.filter((c) => !fixed.includes(c) && !patched.includes(c));
  const tail = extra === undefined ? '' : `, ${extra}`;
  return {
    full: `${text} RETURNING ${answered.join(', ')}${tail}`,
    whole: `${text} RETURNING *${tail}`,
    patched,
    patchedAt,
    answered,
  };
}

/** `a = ?, b = coalesce(b, ?)` → its items, split at the commas outside parentheses. */
function topLevelItems(list: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      items.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(list.slice(start).trim());
  return items;
}
