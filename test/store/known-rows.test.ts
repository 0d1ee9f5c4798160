/**
 * The one holder of SQLite rows' fixed columns (src/store/known-rows.ts) that the sessions' usage
 * UPDATE and the runs' updates use (issue 17 item 3; p-sqlusage and p-sqlrow folded into one): an
 * UPDATE of a held row returns only the columns neither fixed nor set to a plain parameter, and
 * answers the row as `RETURNING *` would, key order included; a `column = column + ?` set is read
 * back; a set inside parentheses with a comma is one item; the extra expression is answered as
 * `last`; a row not held is answered by `RETURNING *` (the extra expression after it) and held from
 * then on; a row gone answers undefined.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { knownRows } from '../../src/store/known-rows';

const opened: Database.Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

interface Row {
  id: string;
  owner: string;
  name: string | null;
  total: number;
  note: string | null;
  updated_at: number;
}

function open() {
  const db = new Database(':memory:');
  opened.push(db);
  db.exec(`CREATE TABLE t (id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT, total INTEGER NOT NULL,
    note TEXT, updated_at INTEGER NOT NULL)`);
  db.prepare(`INSERT INTO t VALUES ('a', 'o1', 'first', 5, NULL, 1), ('b', 'o2', NULL, 0, 'x', 1)`).run();
  const texts: string[] = [];
  const prepare = (text: string) => {
    texts.push(text);
    return db.prepare(text);
  };
  const known = knownRows<Row>(
    ['id', 'owner', 'name', 'total', 'note', 'updated_at'],
    ['id', 'owner'],
    prepare,
  );
  const stored = (id: string) => db.prepare('SELECT * FROM t WHERE id = ?').get(id) as Row;
  return { db, known, texts, stored };
}

describe('known rows', () => {
  it('COMPAT-PERF-452: a held row is answered whole from its fixed columns, its plain sets and the columns read back', () => {
    const { known, texts, stored } = open();
    known.keep(stored('a'));
    const text =
      'UPDATE t SET total = total + ?, name = ?, note = coalesce(note, ?), updated_at = ? WHERE id = ?';
    const row = known.update('a', text, [3, 'second', 'n', 9]);
    expect(texts).toEqual([`${text} RETURNING total, note`]);
    expect(row).toEqual(stored('a'));
    expect(Object.keys(row as Row)).toEqual(Object.keys(stored('a')));
    expect(row).toMatchObject({ total: 8, name: 'second', note: 'n', updated_at: 9 });
    // The same text again: the same statement text, no new shape.
    known.update('a', text, [1, 'third', 'm', 10]);
    expect(texts).toEqual([`${text} RETURNING total, note`, `${text} RETURNING total, note`]);
    expect(stored('a')).toMatchObject({ total: 9, name: 'third', note: 'n' });
  });

  it('COMPAT-PERF-452: the extra expression is answered as last; a row gone answers undefined', () => {
    const { db, known, texts, stored } = open();
    known.keep(stored('b'));
    const text = 'UPDATE t SET note = ?, updated_at = ? WHERE id = ?';
    const answer = known.updateWith('b', text, ['y', 4], '(SELECT count(*) FROM t) AS n');
    expect(texts).toEqual([`${text} RETURNING name, total, (SELECT count(*) FROM t) AS n`]);
    expect(answer).toEqual({ row: stored('b'), last: 2 });
    db.prepare(`DELETE FROM t WHERE id = 'b'`).run();
    expect(known.update('b', text, ['z', 5])).toBeUndefined();
  });

  it('COMPAT-PERF-457: a row not held (never kept, or forgotten) is answered by RETURNING * and held from then on', () => {
    const { db, known, texts, stored } = open();
    const text = 'UPDATE t SET name = ?, updated_at = ? WHERE id = ?';
    const first = known.update('a', text, ['second', 7]);
    expect(texts).toEqual([`${text} RETURNING *`]);
    expect(first).toEqual(stored('a'));
    expect(Object.keys(first as Row)).toEqual(Object.keys(stored('a')));
    // Held now: the next update of it returns only what is neither fixed nor a plain set.
    known.update('a', text, ['third', 8]);
    expect(texts[1]).toBe(`${text} RETURNING total, note`);
    known.forget('a');
    const extra = '(SELECT count(*) FROM t) AS n';
    expect(known.updateWith('a', text, ['fourth', 9], extra)).toEqual({ row: stored('a'), last: 2 });
    expect(texts[2]).toBe(`${text} RETURNING *, ${extra}`);
    expect(known.updateWith('a', text, ['fifth', 10], extra)).toEqual({ row: stored('a'), last: 2 });
    expect(texts[3]).toBe(`${text} RETURNING total, note, ${extra}`);
    db.prepare(`DELETE FROM t WHERE id = 'b'`).run();
    expect(known.update('b', text, ['z', 5])).toBeUndefined();
    expect(known.updateWith('b', text, ['z', 5], extra)).toBeUndefined();
  });
});
