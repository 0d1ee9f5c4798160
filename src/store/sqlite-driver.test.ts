import { describe, expect, it } from 'vitest';
import { loadSqlite, NAPI_BUILD_MIN_NODE_API, sqlitePackage, sqlitePackageFor } from './sqlite-driver';

describe('the SQLite driver', () => {
  it('loads the Node-API build from Node-API 10, the ObjectWrap build before it or when it is missing', () => {
    expect(sqlitePackageFor(9, true)).toBe('better-sqlite3');
    expect(sqlitePackageFor(NAPI_BUILD_MIN_NODE_API, true)).toBe('better-sqlite3-napi');
    expect(sqlitePackageFor(NAPI_BUILD_MIN_NODE_API, false)).toBe('better-sqlite3');
  });

  it('on this runtime, picks by its Node-API version and opens a database', () => {
    const expected =
      Number(process.versions.napi) >= NAPI_BUILD_MIN_NODE_API ? 'better-sqlite3-napi' : 'better-sqlite3';
    expect(sqlitePackage()).toBe(expected);
    const Database = loadSqlite();
    const db = new Database(':memory:');
    const statement = db.prepare('SELECT ? + 1 AS x');
    for (let i = 0; i < 1000; i++) expect(statement.get(i)).toEqual({ x: i + 1 });
    db.close();
  });
});
