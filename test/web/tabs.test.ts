/**
 * The web UI in a browser with many svc tabs. A browser opens at most 6 connections to one server
 * (HTTP/1.1) and every tab showing a session holds one for its event stream, so a 7th tab's calls
 * waited for ever. Pins:
 * - WEB-TABS-1: a hidden page lets its stream go after the grace period (the server has room for
 *   another stream of the session; its badge says "paused while hidden", not "live"); events made
 *   meanwhile show once it is shown again (it resumes with its Last-Event-ID: none lost, none
 *   doubled), while the page in front stays live throughout;
 * - WEB-TABS-2: a hidden page whose session waits on a permission request keeps its stream (an
 *   open stream is an attached client); once the request is answered elsewhere and the run ends,
 *   it lets the stream go, and shown again it shows the answer;
 * - WEB-TABS-3: seven tabs of one browser, one in front at a time (each one before it hidden, and
 *   paused before the next opens): the seventh loads, goes live and gets its answer (it waited
 *   for a connection for ever: six live streams held all six).
 *
 * Headless Chromium reports every page visible, so the pages' visibility is set through what the
 * page reads (`document.visibilityState` and a `visibilitychange` event), as a browser sets them on
 * a tab switch. The grace period is cut to 200 ms (`window.__svcHiddenGraceMs`). Every step waits
 * for a state (a badge, a text, the server's answer), never for a time.
 */
import type { BrowserContext, Page } from 'playwright-core';
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

/** Pages of `context` get `__setHidden(hidden)` and a 200 ms grace period. */
async function controlVisibility(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    let hidden = false;
    Object.defineProperty(Document.prototype, 'visibilityState', {
      configurable: true,
      get: () => (hidden ? 'hidden' : 'visible'),
    });
    Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
    const w = window as unknown as { __setHidden(h: boolean): void; __svcHiddenGraceMs: number };
    w.__svcHiddenGraceMs = 200;
    w.__setHidden = (h: boolean) => {
      hidden = h;
      document.dispatchEvent(new Event('visibilitychange'));
    };
  });
}

const setHidden = (page: Page, hidden: boolean) =>
  page.evaluate((h) => (window as unknown as { __setHidden(h: boolean): void }).__setHidden(h), hidden);

/** Whether the server lets one more event stream of the session in (closed at once). */
async function probeStream(
  service: Service,
  sessionId: string,
): Promise<{ in: boolean; lastEventId: number }> {
  const probe = await rawStream(service, sessionId);
  probe.close();
  return probe;
}

/** The server lets another stream in (it has seen the hidden page's close); bounded at 30 s. */
async function roomForAnother(service: Service, sessionId: string): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const probe = await probeStream(service, sessionId);
    if (probe.in) return probe.lastEventId;
    if (Date.now() > deadline) throw new Error('the server kept the hidden page’s stream for 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Two pages of one browser context showing `sessionId`, both live. */
async function twoPages(service: Service, sessionId: string) {
  const { context, page: front, errors } = await openPage(browser());
  await controlVisibility(context);
  const back = await context.newPage();
  back.setDefaultTimeout(30_000);
  await openSession(front, service, sessionId, 60_000);
  await openSession(back, service, sessionId, 60_000);
  return { front, back, errors };
}

describe('web UI: many tabs', () => {
  it('WEB-TABS-1: a hidden page lets its stream go, and shown again shows what happened meanwhile once', {
    timeout: 180_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().text('first answer'),
      reply().text('answered while the tab was hidden'),
    ]);
    // Two streams a session: with both pages live, the server refuses a third.
    const service = await startService(provider, TOKEN, '[services.http]\nsse_max_streams_per_session = 2\n');
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'two tabs' });
    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'one' });
    await waitIdle(service, session.id);
    const { front, back, errors } = await twoPages(service, session.id);
    await back.getByText('first answer').waitFor();
    await front.getByText('first answer').waitFor();
    expect((await probeStream(service, session.id)).in).toBe(false);
    const resumed = watchStreams(back, session.id);

    // The tab in the back goes hidden: it lets its stream go and does not claim to be live.
    await setHidden(back, true);
    await back.getByText('paused while hidden', { exact: true }).waitFor();
    expect(await back.getByText('live', { exact: true }).count()).toBe(0);
    const latest = await roomForAnother(service, session.id);

    // Another client drives the session meanwhile; the page in front shows it live.
    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'sent while hidden' });
    await waitIdle(service, session.id);
    await front.getByText('answered while the tab was hidden').waitFor();
    expect(await front.getByText('live', { exact: true }).count()).toBe(1);
    expect(await back.getByText('answered while the tab was hidden').count()).toBe(0);

    // Shown again: it resumes after the last event it had, and shows each thing once.
    await setHidden(back, false);
    await back.getByText('answered while the tab was hidden').waitFor();
    await back.getByText('live', { exact: true }).waitFor({ timeout: 60_000 });
    await back.getByText('sent while hidden').waitFor();
    expect(resumed.lastEventIds).toEqual([String(latest)]);
    expect(resumed.over).toEqual(['socket']);
    for (const text of ['first answer', 'answered while the tab was hidden', 'sent while hidden', 'one'])
      expect(await back.getByText(text, { exact: true }).count(), text).toBe(1);
    await shot(back, '45-tab-shown-again');
    expect(errors.filter((e) => !/net::|ERR_|aborted/i.test(e))).toEqual([]);
  });

  it('WEB-TABS-2: a hidden page keeps its stream while a permission request waits, and lets it go after', {
    timeout: 180_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().toolCall('write', { path: 'hidden.txt', content: 'written while hidden\n' }),
      reply().text('wrote it while the tab was hidden'),
    ]);
    const service = await startService(provider, TOKEN, '[services.http]\nsse_max_streams_per_session = 2\n');
    const { session } = await api(service, 'POST', '/v1/sessions', { title: 'asks' });
    const { front, back } = await twoPages(service, session.id);
    await api(service, 'POST', `/v1/sessions/${session.id}/messages`, { prompt: 'write a file' });
    await back.locator('section.permission').waitFor();
    await front.locator('section.permission').waitFor();

    // Hidden with a request waiting: many grace periods later (measured in the page) it is live.
    await setHidden(back, true);
    await back.evaluate(() => new Promise((resolve) => setTimeout(resolve, 2_000)));
    expect(await back.getByText('live', { exact: true }).count()).toBe(1);
    expect((await probeStream(service, session.id)).in).toBe(false);

    // Answered elsewhere: the run ends, and the hidden page lets its stream go.
    const { permissions } = await api(service, 'GET', `/v1/sessions/${session.id}/permissions`);
    expect(permissions).toHaveLength(1);
    await api(service, 'POST', `/v1/sessions/${session.id}/permissions/${permissions[0].request_id}`, {
      decision: 'allow_once',
      by: 'test',
    });
    await waitIdle(service, session.id);
    await back.getByText('paused while hidden', { exact: true }).waitFor();
    await roomForAnother(service, session.id);

    await setHidden(back, false);
    await back.getByText('live', { exact: true }).waitFor({ timeout: 60_000 });
    await back.getByText('wrote it while the tab was hidden').waitFor();
    expect(await back.getByText('wrote it while the tab was hidden').count()).toBe(1);
    expect(await back.locator('section.permission').count()).toBe(0);
  });

  it('WEB-TABS-3: with six tabs hidden, a seventh loads, goes live and gets its answer', {
    timeout: 300_000,
  }, async () => {
    const provider = await fakeProvider([reply().text('answer in the seventh tab')]);
    const service = await startService(provider);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { session } = await api(service, 'POST', '/v1/sessions', { title: `tab ${i}` });
      ids.push(session.id);
    }
    const { context, page: first, errors } = await openPage(browser());
    await controlVisibility(context);
    const tabs: Page[] = [first];
    for (let i = 1; i < 7; i++) {
      const tab = await context.newPage();
      tab.setDefaultTimeout(30_000);
      tabs.push(tab);
    }
    // One tab in front at a time; the one before has let its stream go before the next opens.
    for (let i = 0; i < 7; i++) {
      if (i > 0) {
        await setHidden(tabs[i - 1], true);
        await tabs[i - 1].getByText('paused while hidden', { exact: true }).waitFor();
      }
      await openSession(tabs[i], service, ids[i], 60_000);
      await tabs[i].getByRole('heading', { name: `tab ${i}` }).waitFor();
    }
    await tabs[6].getByLabel('Prompt').fill('hello from the seventh tab');
    await tabs[6].getByLabel('Prompt').press('Enter');
    await tabs[6].getByText('answer in the seventh tab').waitFor();
    await shot(tabs[6], '46-seventh-tab');
    expect(errors.filter((e) => !/net::|ERR_|aborted/i.test(e))).toEqual([]);
  });
});
