/**
 * The /v1/session-operating-mode routes and their error table (spec, Errors → Operating mode
 * routes). Pins, each produced by a real condition:
 * - gate off → 404 plain text on GET, POST and DELETE, never a snapshot (OPMODE-50, OPMODE-22);
 * - app not ready, or no operating-mode parity (a runtime without the controller) → 503 (OPMODE-52);
 * - GET without session_id, or a stored row that cannot be serialized → 400 (OPMODE-53, OPMODE-54);
 * - missing fields, invalid JSON, failed activation → 400 (OPMODE-55/56/57);
 * - no pack-mutation provider (database open read-only) → 503 on POST and DELETE (OPMODE-58);
 * - the success shapes of GET, POST and DELETE (OPMODE-27/30/33..38).
 */
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp } from '../helpers/make-test-app';
import { expectNoMarkers, http, ON, packFiles, packsApp } from './fixtures';

describe('/v1/session-operating-mode', () => {
  it('OPMODE-50 / OPMODE-22 / CFG-18: with options.operating_packs false every method is a plain-text 404', async () => {
    const app = await makeTestApp({ files: packFiles() });
    const session = await app.sessions.create();
    const routes = http(app);
    for (const response of [
      await routes.get(`?session_id=${session.id}`),
      await routes.post({ session_id: session.id, pack_path_or_name: 'review' }),
      await routes.delete(`?session_id=${session.id}`),
    ]) {
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await response.text();
      expect(text).toContain('options.operating_packs is false');
      expect(text).not.toContain('"state"');
      expect(text).not.toMatch(/disabled|unavailable/);
    }
  });

  it('OPMODE-52: before the app is ready every method answers 503', async () => {
    const app = await packsApp({ ready: false });
    const session = await app.sessions.create();
    const routes = http(app);
    for (const response of [
      await routes.get(`?session_id=${session.id}`),
      await routes.post({ session_id: session.id, pack_path_or_name: 'review' }),
      await routes.delete(`?session_id=${session.id}`),
    ]) {
      expect(response.status).toBe(503);
      expect(await response.text()).toBe('App not ready');
    }
    app.runtime.ready = true;
    expect((await routes.get(`?session_id=${session.id}`)).status).toBe(200);
  });

  it('OPMODE-52: a runtime without operating-mode parity (no pack controller) answers 503 with the gate on', async () => {
    const app = await makeTestApp({ files: packFiles(), config: ON, packs: false });
    const session = await app.sessions.create();
    const routes = http(app);
    for (const response of [
      await routes.get(`?session_id=${session.id}`),
      await routes.post({ session_id: session.id, pack_path_or_name: 'review' }),
      await routes.delete(`?session_id=${session.id}`),
    ]) {
      expect(response.status).toBe(503);
      expect(await response.text()).toBe('operating-mode parity is not available in this runtime');
    }
  });

  it('OPMODE-33 / OPMODE-34 / OPMODE-35 / OPMODE-36 / OPMODE-27: POST activates; GET returns the snapshot', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const routes = http(app);
    const posted = await routes.post({ session_id: session.id, pack_path_or_name: './.svc/packs/review' });
    expect(posted.status).toBe(200);
    expect(await posted.json()).toEqual({
      status: 'activated',
      session_id: session.id,
      pack_name: './.svc/packs/review',
    });
    const got = await routes.get(`?session_id=${session.id}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toMatch(/^application\/json/);
    const snapshot = await got.json();
    expect(snapshot).toMatchObject({
      session_id: session.id,
      enabled: true,
      state: 'active',
      active_operating_pack: 'review',
      last_action: 'activate',
    });
  });

  it('OPMODE-37 / OPMODE-38 / OPMODE-30: DELETE clears; GET then shows no pack', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const routes = http(app);
    await routes.post({ session_id: session.id, pack_path_or_name: 'review' });
    const deleted = await routes.delete(`?session_id=${session.id}`);
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ status: 'cleared', session_id: session.id });
    expect(await (await routes.get(`?session_id=${session.id}`)).json()).toMatchObject({
      state: 'enabled_inactive',
      active_operating_pack: '',
      last_action: 'clear',
    });
  });

  it('OPMODE-53: GET without session_id is 400', async () => {
    const app = await packsApp();
    const response = await http(app).get('');
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('session_id: required');
    expect((await http(app).get('?session_id=ses_nope')).status).toBe(400);
  });

  it('OPMODE-54: GET is 400 when the stored state cannot be serialized as the parity snapshot', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const routes = http(app);
    await routes.post({ session_id: session.id, pack_path_or_name: 'review' });
    // A hand-edited or newer-version row: its diagnostics are not the snapshot's shape.
    app.db
      .prepare('UPDATE session_operating_packs SET diagnostics = \'[{"oops":1}]\' WHERE session_id = ?')
      .run(session.id);
    const response = await routes.get(`?session_id=${session.id}`);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe(
      'operating mode snapshot cannot be serialized: stored diagnostics is invalid',
    );
  });

  it('OPMODE-55: POST or DELETE with a missing field is 400', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const routes = http(app);
    const noPack = await routes.post({ session_id: session.id });
    expect(noPack.status).toBe(400);
    expect(await noPack.text()).toContain('pack_path_or_name');
    const noSession = await routes.post({ pack_path_or_name: 'review' });
    expect(noSession.status).toBe(400);
    expect(await noSession.text()).toContain('session_id: required');
    const emptyBody = await routes.post(undefined, '');
    expect(emptyBody.status).toBe(400);
    const deleteNoSession = await routes.delete('');
    expect(deleteNoSession.status).toBe(400);
    expect(await deleteNoSession.text()).toContain('session_id: required');
  });

  it('OPMODE-56: POST with invalid JSON is 400', async () => {
    const app = await packsApp();
    const routes = http(app);
    const response = await routes.post(undefined, '{"session_id": "ses_0001", ');
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('invalid JSON body');
    expect((await routes.post(undefined, '["a"]')).status).toBe(400);
  });

  it('OPMODE-57: a failed activation is 400 and leaves the snapshot in validation_failed', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const routes = http(app);
    const response = await routes.post({ session_id: session.id, pack_path_or_name: 'elsewhere/broken' });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain('failed validation');
    expectNoMarkers(text);
    const unknown = await routes.post({ session_id: session.id, pack_path_or_name: 'no-such-pack' });
    expect(unknown.status).toBe(400);
    const snapshot = (await (await routes.get(`?session_id=${session.id}`)).json()) as Record<string, string>;
    expect(snapshot).toMatchObject({ state: 'validation_failed', active_operating_pack: '' });
    expect(snapshot.unavailable_reason).toContain('no-such-pack');
  });

  it('OPMODE-58: with the database open read-only there is no pack-mutation provider: POST and DELETE are 503', async () => {
    const first = await packsApp();
    const session = await first.sessions.create();
    await http(first).post({ session_id: session.id, pack_path_or_name: 'review' });
    await first.close();

    const app = await makeTestApp({ workspace: first.workspace, env: first.env, readOnlyDb: true });
    expect(app.packs?.mutationUnavailable()).toContain('read-only');
    const routes = http(app);
    const posted = await routes.post({ session_id: session.id, pack_path_or_name: 'strict' });
    expect(posted.status).toBe(503);
    expect(await posted.text()).toContain('no pack-mutation provider');
    const deleted = await routes.delete(`?session_id=${session.id}`);
    expect(deleted.status).toBe(503);
    // Reads still work: the state says why mutations are not possible, the pack stays applied.
    const snapshot = await (await routes.get(`?session_id=${session.id}`)).json();
    expect(snapshot).toMatchObject({
      state: 'mutation_unavailable',
      active_operating_pack: 'review',
      last_action: 'hydrate',
      diagnostics: [
        { section: 'persistence', field: 'mutation_provider', level: 'warning', message: expect.any(String) },
      ],
    });
    expect(app.funnel(await app.funnelContext(session.id)).find((e) => e.name === 'config')?.removed_by).toBe(
      'agent_policy',
    );
  });

  it('AUTH-50: the routes use the same bearer style: 401 without the token on GET, POST and DELETE', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const hono = createHttpApp(app, { token: 'op-token-123456' });
    const path = `/v1/session-operating-mode?session_id=${session.id}`;
    for (const init of [
      { method: 'GET' },
      { method: 'POST', body: JSON.stringify({ session_id: session.id, pack_path_or_name: 'review' }) },
      { method: 'DELETE' },
    ]) {
      expect((await hono.request(path, init)).status, init.method).toBe(401);
      const wrong = await hono.request(path, {
        ...init,
        headers: { authorization: 'Bearer nope-nope-nope' },
      });
      expect(wrong.status, init.method).toBe(401);
    }
    const ok = await hono.request(path, { headers: { authorization: 'Bearer op-token-123456' } });
    expect(ok.status).toBe(200);
    expect((await app.packs!.snapshot(session.id)).active_operating_pack).toBe('');
  });
});
