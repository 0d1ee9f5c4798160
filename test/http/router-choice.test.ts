/**
 * The HTTP app's router (src/surfaces/http/index.ts, issue 17 item 3). Hono's default SmartRouter
 * keeps its RegExpRouter (one regexp, a static map for literal paths) only when every route's
 * pattern is one it takes; a single refused pattern (a regexp parameter beside literal siblings,
 * as the web UI's favicon route once was) sends every request through the slower TrieRouter.
 * Pins:
 * - the real app's router is the RegExpRouter once it has matched;
 * - that router answers every route of the app as the TrieRouter would (same handlers in the same
 *   order, same params) for sample paths of each route and some that match none.
 */
import type { Hono } from 'hono';
import type { ParamIndexMap, Params, Result } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import type { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp } from '../helpers/make-test-app';

type Handler = unknown;
type Matched = [number, Record<string, string>][];

let app: App | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function realApp(): Promise<Hono> {
  app = await makeTestApp();
  app.runtime.ready = true;
  return createHttpApp(app, { token: 'router-secret-1234' });
}

/** Each route's handler as its index in `hono.routes`, with its params by name. */
function normalize(result: Result<Handler>, index: Map<Handler, number>): Matched {
  const [matches, stash] = result as [[Handler, Params | ParamIndexMap][], string[] | undefined];
  return matches.map(([handler, params]) => {
    const named: Record<string, string> = {};
    for (const [key, value] of Object.entries(params)) {
      named[key] = stash ? (stash[value as number] ?? '') : (value as string);
    }
    return [index.get(handler) ?? -1, named];
  });
}

/** A concrete path for a route pattern, plus near misses that must match the same way. */
function samplePaths(pattern: string): string[] {
  const concrete = pattern
    .replace(/\/\*$/, '/rest/of/it')
    .replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, (_, name: string) => `${name}_0123`);
  return [concrete, `${concrete}/`, `${concrete}/extra`, `${concrete}x`];
}

describe('the HTTP app router', () => {
  it('ENGINE-CPU-140: the real app settles on the RegExpRouter, not the TrieRouter', async () => {
    const hono = await realApp();
    expect((await hono.request('/healthz')).status).toBe(200);
    expect((hono.router as SmartRouter<unknown>).activeRouter.name).toBe('RegExpRouter');
  });

  it('ENGINE-CPU-141: the RegExpRouter matches every route of the app as the TrieRouter does', async () => {
    const hono = await realApp();
    const regexp = new RegExpRouter<Handler>();
    const trie = new TrieRouter<Handler>();
    const index = new Map<Handler, number>();
    hono.routes.forEach((route, i) => {
      // One object per registration: its index tells the handlers apart.
      const handler = { i };
      index.set(handler, i);
      regexp.add(route.method, route.path, handler);
      trie.add(route.method, route.path, handler);
    });
    const paths = new Set(['/', '/favicon.svg', '/v1/chat/completions', '/v1/not-a-route', '/nope/deeper']);
    for (const route of hono.routes) for (const path of samplePaths(route.path)) paths.add(path);
    const methods = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS'];
    let routed = 0;
    for (const path of paths) {
      for (const method of methods) {
        const expected = normalize(trie.match(method, path), index);
        expect(normalize(regexp.match(method, path), index), `${method} ${path}`).toEqual(expected);
        if (expected.some(([i]) => hono.routes[i].method !== 'ALL')) routed++;
      }
    }
    // Every non-middleware route was reached by at least one sample.
    expect(routed).toBeGreaterThan(hono.routes.filter((r) => r.method !== 'ALL').length);
  });
});
