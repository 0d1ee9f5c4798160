import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { browserForFile, openPage, promptNewSession, shot, startService, TOKEN } from './harness';

const browser = browserForFile();

const fast = { 'retry-after-ms': '5' };

describe('web UI: a failed run', () => {
  it('shows the line, the next step and the details', { timeout: 120_000 }, async () => {
    const provider = await fakeProvider([
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
      reply().httpError(500, { error: { message: 'upstream exploded' } }, fast),
    ]);
    const service = await startService(provider);
    const { page, errors } = await openPage(browser());
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
