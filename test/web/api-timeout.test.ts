/**
 * The web UI's API client (src/surfaces/web/src/api.ts) when a call goes unanswered. A browser
 * opens at most 6 connections to one server over HTTP/1.1 and queues the rest without a word, so
 * a call can wait behind other svc tabs' event streams (six windows side by side, or six tabs
 * with a run each). Pins WEB-TABS-4: a call not answered in time fails with `timeout`, naming the
 * likely cause (too many svc tabs) and what to do, not "cannot reach the server"; a call the
 * browser could not send at all stays `unreachable`.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, createApi } from '../../src/surfaces/web/src/api';

/** A fetch that never answers: it ends only when its call's signal aborts. */
const silent: typeof fetch = (_input, init) =>
  new Promise((_resolve, reject) => {
    const signal = init?.signal;
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

describe('web UI API client', () => {
  it('WEB-TABS-4: an unanswered call is a timeout that names too many svc tabs and the next step', async () => {
    const api = createApi({
      base: 'http://127.0.0.1:4000/',
      token: () => 't',
      fetch: silent,
      timeoutMs: 1_000,
    });
    const error = await api.get('v1/sessions').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'timeout' });
    expect((error as ApiError).message).toBe(
      'The svc server at http://127.0.0.1:4000/ did not answer in 1 s; too many svc tabs open? A browser opens at most 6 connections to one server, and where a WebSocket cannot reach it (a proxy that does not pass them on) every svc tab showing a session live holds one (a hidden tab lets its go after a few seconds unless its session is running): close some svc tabs and try again, or check that the server is running.',
    );

    const refused = createApi({
      base: 'http://127.0.0.1:4000/',
      token: () => 't',
      fetch: () => Promise.reject(new TypeError('Failed to fetch')),
    });
    await expect(refused.get('v1/sessions')).rejects.toMatchObject({ code: 'unreachable' });
  });
});
