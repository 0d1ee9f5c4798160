/**
 * The web UI when a run fails: Debian's Chromium against the built service, the fake provider
 * answering HTTP 500. Pins: the transcript shows what failed (provider and model), the next step
 * and, one click away, the details (the classified failure's code and HTTP status).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import {
  LAUNCH_HOOK_MS,
  launchBrowser,
  openPage,
  promptNewSession,
  shot,
  startService,
  TOKEN,
} from './harness';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
}, LAUNCH_HOOK_MS);
afterAll(async () => {
  await browser?.close();
});

const fast = { 'retry-after-ms': '5' };

describe('web UI: a failed run', () => {
  it('shows the line, the next step and the details', { timeout: 120_000 }, async () => {
    const provider = await fakeProvider([
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
    ]);
    const service = await startService(provider);
    const { page, errors } = await openPage(browser);
    await page.goto(`${service.url}/#token=${TOKEN}`);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await promptNewSession(page, 'hello');

    const notice = page.locator('.item.notice.error');
    await notice.waitFor();
    expect(await notice.locator('p').first().textContent()).toBe(
      '✗ the provider failed on its side (HTTP 500, 3 attempts): "upstream exploded" (provider fake, model fake/m1)',
    );
    expect(await notice.locator('p.next').textContent()).toContain('Next: retry later');
    await notice.getByText('Details').click();
    const details = JSON.parse((await notice.locator('pre').textContent()) ?? '{}');
    expect(details).toMatchObject({
      code: 'provider_server_error',
      status: 500,
      attempts: 3,
      provider: 'fake',
    });
    await shot(page, '30-run-failed');
    expect(errors).toEqual([]);
  });
});
