/**
 * The web UI's permission card in headless Chromium shows a command as it runs: a bidi override
 * (`ls \u202e;touch X #\u202c` reads `ls # X hcuot;` when rendered) is shown as a marker
 * (`<U+202E>`) in the title and the command with a warning line on the card, and the command
 * wraps, so padding cannot push its tail out of sight to the right.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { browserForFile, openPage, promptNewSession, shot, signIn, startService } from './harness';

const browser = browserForFile();

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('web UI permission card', () => {
  it('shows bidi overrides as markers with a warning, and wraps the command', {
    timeout: 120_000,
  }, async () => {
    const command = `ls \u202e;touch PWNED_BIDI #\u202c${' '.repeat(400)}; echo TAIL_END`;
    const provider = await fakeProvider([reply().toolCall('bash', { command }), reply().text('Not run.')]);
    const service = await startService(provider);
    const { page, errors } = await openPage(browser());
    await page.goto(`${service.url}/`);
    await signIn(page);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await promptNewSession(page, 'list the files', 'bidi');

    const card = page.locator('section.permission');
    await card.waitFor();
    const pre = card.locator('.code pre');
    const shown = (await pre.textContent()) ?? '';
    expect(shown).toContain('ls <U+202E>;touch PWNED_BIDI #<U+202C>');
    expect(shown).not.toMatch(BIDI);
    const title = (await card.locator('.perm-title').textContent()) ?? '';
    expect(title).toContain('<U+202E>');
    expect(title).not.toMatch(BIDI);
    expect(await card.getByRole('alert').textContent()).toContain(
      'contains characters that change its displayed order',
    );
    // The command wraps: its tail is inside the card, nothing scrolls sideways.
    expect(await pre.evaluate((el) => getComputedStyle(el).whiteSpace)).toBe('pre-wrap');
    expect(await pre.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    // The tool's line above the card quotes the command: in the same order.
    const toolTitle = (await page.locator('.item.tool .tool-title').first().textContent()) ?? '';
    expect(toolTitle).toContain('ls <U+202E>;touch PWNED_BIDI');
    await shot(page, 'permission-bidi');
    // Where the last characters are drawn (a range over them), against the box of the <pre>.
    const [tailRight, boxRight] = await pre.evaluate((el) => {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      let node = walker.nextNode();
      while (node && !node.textContent?.includes('TAIL_END')) node = walker.nextNode();
      if (!node) return [Number.POSITIVE_INFINITY, 0];
      const range = document.createRange();
      const at = node.textContent!.indexOf('TAIL_END');
      range.setStart(node, at);
      range.setEnd(node, at + 'TAIL_END'.length);
      return [range.getBoundingClientRect().right, el.getBoundingClientRect().right];
    });
    expect(tailRight).toBeLessThanOrEqual(boxRight);

    await card.getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Not run.').waitFor();
    expect(existsSync(join(service.workspace, 'PWNED_BIDI'))).toBe(false);
    expect(errors.filter((e) => !e.includes('status of 401'))).toEqual([]);
  });
});
