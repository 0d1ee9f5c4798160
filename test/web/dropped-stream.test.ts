import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import {
  api,
  browserForFile,
  openPage,
  openSession,
  rawStream,
  type Service,
  shot,
  startService,
  TOKEN,
  waitIdle,
  watchStreams,
} from './harness';

const browser = browserForFile();

/** A raw client's event stream of the session, let in and kept read until `close`. */
async function holdStream(service: Service, sessionId: string) {
  const held = await rawStream(service, sessionId);
  if (!held.in) throw new Error('the held stream was not let in');
  return held;
}

describe('web UI: a dropped event stream', () => {
  it('WEB-DROP-1: refused for the stream limit, says so, does not hammer, and connects on "Try again now"', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().text('answered while the view waited'),
      reply().text('answered live after the retry'),
    ]);
    const service = await startService(provider, TOKEN, '[services.http]\nsse_max_streams_per_session = 1\n');
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'crowded' });
    const held = await holdStream(service, session.id);
    const { page, errors } = await openPage(browser());
    const streams = watchStreams(page, session.id);

    await openSession(page, service, session.id);
    const notice = page.getByRole('alert').filter({ hasText: 'too many open views' });
    await notice.waitFor({ timeout: 15_000 });
    const text = (await notice.textContent()) ?? '';
    expect(text).toContain('sse_max_streams_per_session');
    expect(text).toContain('Close another tab or window showing this session');
    expect(await page.getByText('too many views', { exact: true }).isVisible()).toBe(true);
    await shot(page, '40-stream-limit');

    // A few seconds with the limit still reached: the page waits, it does not ask again and again
    // (the old loop asked at 0.5, 1, 2 and 4 s: four streams in these five seconds).
    await page.waitForTimeout(5_000);
    expect(streams.over.length).toBeLessThanOrEqual(2);
    expect(streams.over[0]).toBe('socket');
    expect(await notice.isVisible()).toBe(true);

    // Meanwhile another client drives the session; then the other stream closes and the user retries.
    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'while you waited' });
    await waitIdle(service, session.id);
    held.close();
    // The server lets go of the held stream when it sees the close: a press before that is refused
    // again (the notice stays), and the user presses again.
    const retry = page.getByRole('button', { name: 'Try again now' });
    const live = page.getByText('live', { exact: true });
    for (let press = 1; ; press++) {
      if (await retry.isVisible()) await retry.click();
      const wentLive = await live.waitFor({ timeout: 3_000 }).then(
        () => true,
        () => false,
      );
      if (wentLive) break;
      if (press >= 10) throw new Error('the page did not go live after 10 presses of "Try again now"');
    }
    await page.getByText('answered while the view waited').waitFor();
    expect(await notice.count()).toBe(0);

    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'after the retry' });
    await page.getByText('answered live after the retry').waitFor();
    expect(await page.getByText('answered while the view waited').count()).toBe(1);
    await shot(page, '41-stream-limit-retried');
    expect(errors.filter((e) => !/net::|ERR_/.test(e))).toEqual([]);
  });

  for (const [id, reason] of [
    ['WEB-DROP-2', 'backlog_limit'],
    ['WEB-DROP-3', 'buffer_budget'],
  ] as const) {
    it(`${id}: dropped for falling behind (${reason}), reconnects with Last-Event-ID and misses nothing`, {
      timeout: 120_000,
    }, async () => {
      const provider = await fakeProvider([
        reply().text('first answer'),
        reply().text('answered while the stream was down'),
      ]);
      const service = await startService(provider);
      const { session } = await api(service, 'POST', '/v1/sessions', { title: 'behind' });
      await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'one' });
      await waitIdle(service, session.id);
      const probe = await holdStream(service, session.id);
      probe.close();
      const latest = probe.lastEventId;
      expect(latest).toBeGreaterThan(0);

      const { page, errors } = await openPage(browser());
      // The first stream is the server's answer to a page that fell behind: `connected`, then
      // `dropped`. The second is held until another client has driven the session meanwhile.
      const lastEventIds: string[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let reconnected!: () => void;
      const reconnecting = new Promise<void>((resolve) => {
        reconnected = resolve;
      });
      // The page's event socket, served by the test: the first is answered here; the others go on
      // to the server (the second once released).
      await page.routeWebSocket(/\/events(\?|$)/, async (socket) => {
        lastEventIds.push(new URL(socket.url()).searchParams.get('last_event_id') ?? '');
        if (lastEventIds.length === 1) {
          const connected = { type: 'connected', session_id: session.id, last_event_id: latest };
          const dropped = {
            type: 'dropped',
            session_id: session.id,
            reason,
            message: `over the ${reason} limit; reconnect with Last-Event-ID to resume`,
          };
          socket.send(
            `event: connected\nid: ${latest}\ndata: ${JSON.stringify(connected)}\n\n` +
              `event: dropped\nid: ${latest}\ndata: ${JSON.stringify(dropped)}\n\n`,
          );
          await socket.close({ code: 1000 });
          return;
        }
        if (lastEventIds.length === 2) {
          reconnected();
          await released;
        }
        socket.connectToServer();
      });

      await openSession(page, service, session.id);
      await page.getByText('first answer').waitFor();
      await reconnecting;
      await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'while dropped' });
      await waitIdle(service, session.id);
      release();

      await page.getByText('answered while the stream was down').waitFor();
      await page.getByText('live', { exact: true }).waitFor();
      const note = page.getByRole('status').filter({ hasText: 'fell behind' });
      await note.waitFor({ timeout: 15_000 });
      expect(await note.textContent()).toContain(reason);
      expect(lastEventIds[1]).toBe(String(latest));
      expect(await page.getByText('answered while the stream was down').count()).toBe(1);
      expect(await page.getByText('first answer').count()).toBe(1);
      await shot(page, `42-dropped-${reason}`);
      expect(errors.filter((e) => !/net::|ERR_/.test(e))).toEqual([]);
    });
  }
});
