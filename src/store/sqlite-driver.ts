/**
 * Which build of better-sqlite3 svc loads.
 *
 * better-sqlite3 12 is a `node::ObjectWrap` addon. From Node 24.19 the destructor of an ObjectWrap
 * asserts that a V8 context is entered, so a prepared statement collected by an idle GC aborts the
 * process (`Assertion failed: (env) != nullptr` in `RemoveEnvironmentCleanupHook`,
 * nodejs/node#65446). better-sqlite3 13 is rewritten on Node-API and has no such destructor, but
 * needs Node-API 10 (Node 22.14 and later) and segfaults on Node 20's Node-API 9.
 *
 * So both are installed: `better-sqlite3` (12, compiled at install, for Node 20) and the optional
 * `better-sqlite3-napi` alias of 13 (prebuilt in the npm package, no compile). svc loads 13
 * wherever the runtime offers Node-API 10, and 12 everywhere else. The two share one API.
 */

import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteConstructor = typeof BetterSqlite3;

/** The Node-API version from which the Node-API build of better-sqlite3 is used. */
export const NAPI_BUILD_MIN_NODE_API = 10;

let loaded: SqliteConstructor | undefined;

/** The package svc loads on a runtime: the Node-API build when Node-API >= 10 and it is installed. */
export function sqlitePackageFor(nodeApiVersion: number, napiBuildInstalled: boolean): string {
  return nodeApiVersion >= NAPI_BUILD_MIN_NODE_API && napiBuildInstalled
    ? 'better-sqlite3-napi'
    : 'better-sqlite3';
}

/** The package svc loads on this runtime. */
export function sqlitePackage(): string {
  const requireHere = createRequire(import.meta.url);
  let installed = true;
  try {
    requireHere.resolve('better-sqlite3-napi');
  } catch {
    installed = false;
  }
  return sqlitePackageFor(Number(process.versions.napi ?? 0), installed);
}

export function loadSqlite(): SqliteConstructor {
  if (!loaded) loaded = createRequire(import.meta.url)(sqlitePackage()) as SqliteConstructor;
  return loaded;
}

/** The resolved module path of the package svc loads (a worker thread loads the same build). */
export function sqliteModulePath(): string {
  return createRequire(import.meta.url).resolve(sqlitePackage());
}
