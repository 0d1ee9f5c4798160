/**
 * The web UI's event streams over WebSockets (src/surfaces/web/src/event-transport.ts). A browser
 * opens at most 6 connections to one server over HTTP/1.1 and a fetched event stream holds one, so
 * six live pages took them all and a seventh page's calls waited; WebSockets are not counted. Pins:
 * - WEB-WS-9: eight visible pages of eight sessions in one browser are live at once, each over one
 *   WebSocket (the page's `connect-src 'self'` lets it through), and each gets its run's answer;
 * - WEB-WS-10: behind a proxy that refuses WebSocket upgrades the page falls back to the fetched
 *   stream, goes live and gets its answer; it tried the socket once.
 * Every step waits for a state (a badge, a text), never for a time.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import {
  api,
  browserForFile,
  openPage,
  openSession,
  prefixProxy,
  shot,
  signIn,
  startService,
  watchStreams,
} from './harness';

const browser = browserForFile();

describe('web UI: event streams over WebSockets', () => {
  it('WEB-WS-9: eight visible pages of eight sessions are live at once and each gets its answer', {
    timeout: 300_000,
  }, async () => {
    const pages = 8;
    const provider = await fakeProvider(
      Array.from({ length: pages }, (_, i) => reply().text(`answer in page ${i}`)),
    );
    const service = await startService(provider);
    const ids: string[] = [];
    for (let i = 0; i < pages; i++) {
      const { session } = await api(service, 'POST', '/v1/sessions', { title: `page ${i}` });
      ids.push(session.id);
    }
    const { context, page: first, errors } = await openPage(browser());
    const tabs: Page[] = [first];
    for (let i = 1; i < pages; i++) {
      const tab = await context.newPage();
      tab.setDefaultTimeout(30_000);
      tabs.push(tab);
    }
    const streams = tabs.map((tab, i) => watchStreams(tab, ids[i]));
    for (let i = 0; i < pages; i++) {
      await openSession(tabs[i], service, ids[i], 60_000);
      await tabs[i].getByRole('heading', { name: `page ${i}` }).waitFor();
    }
    for (const tab of tabs) expect(await tab.getByText('live', { exact: true }).count()).toBe(1);

    // One after another (the fake provider answers in order), each page's run answers in it.
    for (let i = 0; i < pages; i++) {
      await tabs[i].getByLabel('Prompt').fill(`hello from page ${i}`);
      await tabs[i].getByLabel('Prompt').press('Enter');
      await tabs[i].getByText(`answer in page ${i}`).waitFor();
    }
    for (let i = 0; i < pages; i++) {
      expect(await tabs[i].getByText('live', { exact: true }).count(), `page ${i}`).toBe(1);
      expect(streams[i].over, `page ${i}`).toEqual(['socket']);
    }
    await shot(tabs[pages - 1], '47-eighth-page');
    expect(errors.filter((e) => !/net::|ERR_|aborted/i.test(e))).toEqual([]);
  });

  it('WEB-WS-10: behind a proxy that refuses WebSocket upgrades, the page goes live over the fetched stream', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([reply().text('answered over the fetched stream')]);
    const service = await startService(provider);
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'behind a proxy' });
    const base = await prefixProxy(service.url);
    const { page, errors } = await openPage(browser());
    const sockets: string[] = [];
    page.on('websocket', (socket) => sockets.push(new URL(socket.url()).pathname));
    const fetched: string[] = [];
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname;
      if (path === `/svc/v1/sessions/${session.id}/events`) fetched.push(path);
    });

    await page.goto(base);
    await signIn(page);
    await page.getByRole('link', { name: /behind a proxy/ }).click();
    await page.getByText('live', { exact: true }).waitFor();
    await page.getByLabel('Prompt').fill('hello through the proxy');
    await page.getByLabel('Prompt').press('Enter');
    await page.getByText('answered over the fetched stream').waitFor();
    expect(await page.getByText('live', { exact: true }).count()).toBe(1);
    expect(sockets).toEqual([`/svc/v1/sessions/${session.id}/events`]);
    expect(fetched.length).toBeGreaterThanOrEqual(1);
    // The browser logs the refused upgrade (502) and the sign-in probe (401).
    expect(errors.filter((e) => !/WebSocket connection .* 502|status of 401/.test(e))).toEqual([]);
  });
});
