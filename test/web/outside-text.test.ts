import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { api, browserForFile, openPage, shot, signIn, startService } from './harness';

const browser = browserForFile();

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('web UI outside text', () => {
  it('shows bidi controls in a session title and a file name as markers', { timeout: 120_000 }, async () => {
    const path = 'notes\u202Etxt.exe';
    const provider = await fakeProvider([
      reply().toolCall('write', { path, content: 'hi\n' }),
      reply().text('Written.'),
    ]);
    const service = await startService(provider);
    const title = '<img src=x>\u202Eevil \u2066isolated\u2069 tail';
    await api(service, 'POST', '/v1/sessions', { title });
    const { page, errors } = await openPage(browser());
    await page.goto(`${service.url}/`);
    await signIn(page);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();

    const listed = page.locator('.session-list .title');
    await listed.waitFor();
    const listedText = (await listed.textContent()) ?? '';
    expect(listedText).toBe('<img src=x><U+202E>evil <U+2066>isolated<U+2069> tail');
    expect(await page.locator('body').textContent()).not.toMatch(BIDI);

    await listed.click();
    const heading = page.locator('.session-head h1');
    await heading.waitFor();
    expect(await heading.textContent()).toBe(listedText);

    await page.getByText('live', { exact: true }).waitFor();
    await page.getByLabel('Prompt').fill('write the notes');
    await page.getByLabel('Prompt').press('Enter');
    const card = page.locator('section.permission');
    await card.getByRole('button', { name: 'Allow once' }).click();
    await page.getByText('Written.').waitFor();
    const tool = page.locator('.item.tool').first();
    expect(await tool.locator('ul.files').textContent()).toContain('notes<U+202E>txt.exe');
    expect(await tool.locator('.summary').textContent()).toContain('notes<U+202E>txt.exe');
    expect(await page.locator('body').textContent()).not.toMatch(BIDI);
    await shot(page, 'outside-text-bidi');
    expect(errors.filter((e) => !e.includes('status of 401'))).toEqual([]);
  });
});
