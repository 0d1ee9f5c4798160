/**
 * The web UI live: the event stream across a server restart, and two browsers on one session.
 * Pins:
 * - `#token=` in the address signs in and leaves the address bar and history;
 * - the server going away mid-stream shows a banner; once it is back the page resumes with
 *   Last-Event-ID and replays what happened meanwhile (a prompt sent by another client and its
 *   answer) exactly once; a reload shows the same transcript;
 * - a permission request shows in both browsers; answered in one, it goes from both and the run
 *   resumes in both; the page fits a phone's width.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import {
  api,
  browserForFile,
  openPage,
  openSession,
  shot,
  startService,
  TOKEN,
  waitIdle,
  watchStreams,
} from './harness';

const browser = browserForFile();

const texts = (page: Page) => page.locator('.transcript .item').allTextContents();

describe('web UI live', () => {
  it('resumes after a server restart and replays what it missed exactly once', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().text('first answer'),
      reply().text('answer sent while you were away'),
      reply().text('after the restart'),
    ]);
    const service = await startService(provider);
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'reconnect' });
    const { page, errors } = await openPage(browser());

    // The token in the fragment signs in and is removed from the address.
    await page.goto(`${service.url}/#token=${TOKEN}`);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    expect(page.url()).not.toContain(TOKEN);
    await page.getByRole('link', { name: /reconnect/ }).click();
    await page.getByText('live', { exact: true }).waitFor();

    await page.getByLabel('Prompt').fill('one');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('first answer').waitFor();
    await waitIdle(service, session.id);

    const resumed = watchStreams(page, session.id).lastEventIds;
    // The server stops mid-stream: the page says so and keeps trying.
    let blocked = true;
    await page.routeWebSocket(/\/events(\?|$)/, async (socket) => {
      if (blocked) await socket.close({ code: 1011 });
      else socket.connectToServer();
    });
    await page.route('**/events', (route) => route.abort());
    await service.stop();
    await page.getByText(/Connection lost/).waitFor();
    await shot(page, '10-server-gone');
    // While the page cannot reach the stream, another client drives the session.
    await service.restart();
    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'from the api' });
    await waitIdle(service, session.id);
    blocked = false;
    await page.unroute('**/events');

    await page.getByText('answer sent while you were away').waitFor();
    await page.getByText('from the api').waitFor();
    await page.getByText('live', { exact: true }).waitFor();
    expect(resumed.filter(Boolean).length).toBeGreaterThan(0);
    expect(Number(resumed.filter(Boolean).at(-1))).toBeGreaterThan(0);
    expect(await page.getByText('answer sent while you were away').count()).toBe(1);
    expect(await page.getByText('first answer').count()).toBe(1);

    await page.getByLabel('Prompt').fill('two');
    await page.getByLabel('Prompt').press('Enter');
    await page.getByText('after the restart').waitFor();
    await waitIdle(service, session.id);
    await page.locator('.item.assistant', { hasText: 'after the restart' }).waitFor();
    const live = await texts(page);
    await shot(page, '11-resumed');

    // A reload builds the same transcript from the history.
    await page.reload();
    await page.getByText('after the restart').waitFor();
    expect(await texts(page)).toEqual(live);
    expect(live.filter((t) => t.includes('answer sent while you were away'))).toHaveLength(1);
    expect(errors.filter((e) => !/status of 401|ERR_FAILED|net::/.test(e))).toEqual([]);
  });

  it('shows a permission request in two browsers; an answer in one resumes the run in both', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().toolCall('write', { path: 'notes.md', content: '# Notes\n\n- first\n- second\n' }),
      reply().text('Saved the notes.'),
    ]);
    const service = await startService(provider);
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'shared' });
    const a = await openPage(browser());
    const b = await openPage(browser(), { viewport: { width: 390, height: 844 } });
    await openSession(a.page, service, session.id, 30_000);
    await openSession(b.page, service, session.id, 30_000);

    await a.page.getByLabel('Prompt').fill('take notes');
    await a.page.getByLabel('Prompt').press('Enter');
    await a.page.locator('section.permission').waitFor();
    await b.page.locator('section.permission').waitFor();
    await b.page.getByText('take notes').waitFor();
    await shot(b.page, '12-phone-permission');
    // Nothing is wider than a phone's screen (long lines scroll inside their own boxes).
    expect(await b.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

    await b.page.getByRole('button', { name: 'Allow for this session' }).click();
    await a.page.getByText('Saved the notes.').waitFor();
    await b.page.getByText('Saved the notes.').waitFor();
    expect(await a.page.locator('section.permission').count()).toBe(0);
    expect(await b.page.locator('section.permission').count()).toBe(0);
    await shot(a.page, '13-answered-elsewhere');
    await shot(b.page, '14-phone-answered');
    expect(await b.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const trace = await api(service, 'GET', `/v1/agent-runs?session_id=${session.id}`);
    expect(trace.runs[0].status).toBe('completed');
  });
});
