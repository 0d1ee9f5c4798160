/**
 * The web UI with many tabs and views. Pins:
 * - a browser opens at most 6 connections to one server and every session tab's event stream
 *   holds one: a hidden tab lets its stream go after a grace period (its badge says "paused"), so
 *   a 7th tab loads and sends; shown again, the tab resumes with Last-Event-ID and shows what
 *   happened meanwhile, once;
 * - a stream the server refuses because the session has too many (`dropped`, `stream_limit`) says
 *   so plainly, not "connection lost", and the page goes live once a view closes.
 *
 * Headless Chromium reports every page visible (bringToFront, minimised windows and background
 * tabs included), so the tabs' visibility is set through the Page Visibility API the page reads
 * (`document.visibilityState` and a `visibilitychange` event), as a browser sets it on a tab switch.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import {
  api,
  LAUNCH_HOOK_MS,
  launchBrowser,
  openPage,
  type Service,
  shot,
  startService,
  TOKEN,
  waitIdle,
} from './harness';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
}, LAUNCH_HOOK_MS);
afterAll(async () => {
  await browser?.close();
});

/** Pages of `context` get `__setHidden(hidden)`: the tab switch a headless browser never makes. */
async function controlVisibility(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    let hidden = false;
    Object.defineProperty(Document.prototype, 'visibilityState', {
      configurable: true,
      get: () => (hidden ? 'hidden' : 'visible'),
    });
    Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
    (window as unknown as { __setHidden(h: boolean): void }).__setHidden = (h: boolean) => {
      hidden = h;
      document.dispatchEvent(new Event('visibilitychange'));
    };
  });
}

const setHidden = (page: Page, hidden: boolean) =>
  page.evaluate((h) => (window as unknown as { __setHidden(h: boolean): void }).__setHidden(h), hidden);

async function openSession(page: Page, service: Service, sessionId: string) {
  await page.goto(`${service.url}/#token=${TOKEN}`);
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  await page.goto(`${service.url}/#/s/${sessionId}`);
  await page.getByText('live', { exact: true }).waitFor({ timeout: 60_000 });
}

describe('web UI tabs', () => {
  it('hidden tabs let their streams go: a 7th tab loads and sends, a tab shown again catches up', {
    timeout: 180_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().text('answer in the seventh tab'),
      reply().text('answered while tab 0 was hidden'),
    ]);
    const service = await startService(provider);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { session } = await api(service, 'POST', '/v1/sessions', { title: `tab ${i}` });
      ids.push(session.id);
    }
    const { context, page: first, errors } = await openPage(browser);
    await controlVisibility(context);
    const tabs: Page[] = [first];
    for (let i = 1; i < 7; i++) tabs.push(await context.newPage());

    // Six tabs, one at a time in front (the one before goes to the background, as on a tab switch,
    // and has let its stream go before the next opens: on a loaded box opening a tab can outlast
    // the grace period or not, and the count of streams held would depend on it).
    for (let i = 0; i < 6; i++) {
      await openSession(tabs[i], service, ids[i]);
      await tabs[i].getByRole('heading', { name: `tab ${i}` }).waitFor();
      if (i > 0) {
        await setHidden(tabs[i - 1], true);
        await tabs[i - 1].getByText('paused', { exact: true }).waitFor();
      }
    }
    await setHidden(tabs[5], true);
    await tabs[0].getByText('paused', { exact: true }).waitFor();
    expect(await tabs[0].getByText('live', { exact: true }).count()).toBe(0);

    // The 7th tab loads (it waited for a connection forever before) and sends.
    await openSession(tabs[6], service, ids[6]);
    await tabs[6].getByLabel('Prompt').fill('hello from the seventh tab');
    await tabs[6].getByLabel('Prompt').press('Enter');
    await tabs[6].getByText('answer in the seventh tab').waitFor();
    await waitIdle(service, ids[6]);
    await shot(tabs[6], '40-seventh-tab');

    // Another client drives tab 0's session while it is hidden; shown again, it catches up.
    const resumed: string[] = [];
    tabs[0].on('request', (request) => {
      if (request.url().endsWith(`/v1/sessions/${ids[0]}/events`))
        resumed.push(request.headers()['last-event-id'] ?? '');
    });
    await api(service, 'POST', `/v1/sessions/${ids[0]}/messages`, { prompt: 'sent while hidden' });
    await waitIdle(service, ids[0]);
    await setHidden(tabs[6], true);
    await setHidden(tabs[0], false);
    await tabs[0].getByText('answered while tab 0 was hidden').waitFor();
    await tabs[0].getByText('live', { exact: true }).waitFor();
    expect(Number(resumed.at(-1))).toBeGreaterThan(0);
    expect(await tabs[0].getByText('answered while tab 0 was hidden').count()).toBe(1);
    await tabs[0].getByText('sent while hidden').waitFor();
    await shot(tabs[0], '41-shown-again');
    expect(errors.filter((e) => !/ERR_FAILED|net::|aborted/i.test(e))).toEqual([]);
  });

  it('a stream refused for the session stream limit says so and goes live once a view closes', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([]);
    const service = await startService(provider, TOKEN, '[services.http]\nsse_max_streams_per_session = 1\n');
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'crowded' });
    const a = await openPage(browser);
    const b = await openPage(browser);
    await openSession(a.page, service, session.id);

    await b.page.goto(`${service.url}/#token=${TOKEN}`);
    await b.page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await b.page.goto(`${service.url}/#/s/${session.id}`);
    const banner = b.page.getByText(/too many open views of this session/);
    await banner.waitFor();
    const text = (await banner.textContent()) ?? '';
    expect(text).toContain('sse_max_streams_per_session');
    expect(text).toContain('Close some tabs or windows showing this session');
    expect(text).not.toContain('Connection lost');
    expect(await b.page.getByText('live', { exact: true }).count()).toBe(0);
    await shot(b.page, '42-stream-limit');

    await a.context.close();
    await b.page.getByText('live', { exact: true }).waitFor();
    expect(await b.page.getByText(/too many open views/).count()).toBe(0);
  });
});
