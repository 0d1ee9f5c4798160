/**
 * The web UI in headless Chromium against the built `svc service start http` and the scripted
 * fake provider. Pins:
 * - sign-in by the bearer token: a wrong one is refused on the page; the right one is kept in
 *   session storage only (no cookie) and sent as a header;
 * - create a session, send a prompt, see the write's diff in a permission card, allow it once,
 *   see the tool line and the final answer (markdown, highlighted code, reasoning collapsed);
 * - undo restores the checkpoint taken before the prompt (the file the run wrote is gone);
 * - the server going away mid-stream shows a banner; after the restart the page resumes with
 *   Last-Event-ID and replays what it missed exactly once;
 * - the page fits a phone's width.
 * Screenshots go to test-results/web/.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { browserForFile, openPage, promptNewSession, shot, signIn, startService, TOKEN } from './harness';

const browser = browserForFile();

const auth = { authorization: `Bearer ${TOKEN}` };

describe('web UI', () => {
  it('signs in, runs a prompt with an approved write, shows the diff and answer, and undoes it', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([
      reply()
        .reasoning('The user wants a greeting file.\nI will write it.')
        .toolCall('write', { path: 'hello.txt', content: 'hello from the web\n' }),
      reply().text('I wrote **hello.txt**:\n\n```ts\nconst greeting: string = "hello";\n```\n'),
    ]);
    const service = await startService(provider);
    const { page, context, errors } = await openPage(browser());
    await page.goto(`${service.url}/`);

    // Sign-in: a wrong token is refused with a message, the page stays usable.
    await expect.poll(() => page.getByLabel('Access token').isVisible()).toBe(true);
    await shot(page, '01-sign-in');
    await signIn(page, 'not-the-token');
    await page.getByText('The server rejected the token').waitFor();
    await shot(page, '02-wrong-token');
    await signIn(page);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => sessionStorage.getItem('svc.token'))).toBe(TOKEN);

    // Create a session and send a prompt with Enter.
    await promptNewSession(page, 'Write a greeting file', 'greeting');

    // The permission card shows the diff of the write, with the TUI's three answers.
    const card = page.locator('section.permission');
    await card.waitFor();
    await expect.poll(() => card.locator('.diff-name').first().textContent()).toContain('hello.txt');
    expect(await card.locator('td.code-cell.add, tr.add td.code-cell').first().textContent()).toContain(
      'hello from the web',
    );
    for (const name of ['Allow once', 'Allow for this session', 'Deny'])
      expect(await card.getByRole('button', { name }).isVisible()).toBe(true);
    await shot(page, '03-permission');
    expect(existsSync(join(service.workspace, 'hello.txt'))).toBe(false);
    await card.getByRole('button', { name: 'Allow once' }).click();

    // The run resumes: the tool line, the diff, the final answer.
    await page.locator('.item.assistant strong', { hasText: 'hello.txt' }).waitFor();
    await expect.poll(() => page.locator('section.permission').count()).toBe(0);
    const tool = page.locator('.item.tool').first();
    expect(await tool.locator('.tool-line').textContent()).toMatch(/✓.*write.*\+1.*-0/s);
    expect(await tool.locator('.duration').textContent()).toMatch(/\d+(\.\d)? m?s/);
    expect(await page.locator('.code .hljs-keyword').first().textContent()).toBe('const');
    const reasoning = page.locator('details.reasoning');
    expect(await reasoning.getAttribute('open')).toBeNull();
    expect(await reasoning.locator('summary').textContent()).toContain('Thinking (2 lines)');
    await page.getByText('idle', { exact: true }).first().waitFor();
    expect(readFileSync(join(service.workspace, 'hello.txt'), 'utf8')).toBe('hello from the web\n');
    await shot(page, '04-answer');

    // Undo: the checkpoint taken before the prompt comes back; the file the run wrote goes.
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Undo last prompt' }).click();
    await page.getByText(/Undone: \d+ file\(s\) written back, 1 removed/).waitFor();
    expect(existsSync(join(service.workspace, 'hello.txt'))).toBe(false);
    await shot(page, '05-undone');

    // The runs ledger shows the run with its tool call and timings.
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.locator('table.data code', { hasText: /^run_/ }).first().click();
    await page.getByRole('heading', { name: 'Steps and tools' }).waitFor();
    expect(await page.locator('ol.steps').textContent()).toContain('write');
    await page.getByRole('heading', { name: 'Ledger events' }).waitFor();
    await shot(page, '06-run-trace');

    // The only failed loads are the 401s of the sign-in (no token, then the wrong one).
    expect(errors.filter((e) => !e.includes('status of 401'))).toEqual([]);
    expect(errors.length).toBeLessThanOrEqual(2);
    expect(provider.unexpected).toEqual([]);
    const sessions = await (await fetch(`${service.url}/v1/sessions`, { headers: auth })).json();
    expect(sessions.sessions).toHaveLength(1);
  });
});
