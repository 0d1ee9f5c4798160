/**
 * Whatever bytes stdin gives the TUI, it keeps running and keeps taking keys. Ink's key parser
 * threw on an SGR sequence (`ESC [31m`: its legacy parser reads `31` as a modifier with ctrl and
 * finds no key name, and `useInput` then calls `.startsWith` on undefined), which stopped the TUI
 * when a person pasted colored terminal output. ui/key-input.tsx hands Ink's key listeners only
 * the keys Ink knows, and a paste's text whole, with its escape sequences removed.
 */
import { render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { PASTE_END, PASTE_START } from '../../src/surfaces/tui/ui/key-input';
import { fakeClient, waitFor } from './fake-client';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function chatScreen() {
  const client = fakeClient();
  const controller = createChatController(client, { store: { intervalMs: 0 } });
  const view = render(<TuiApp controller={controller} armDelayMs={0} />);
  cleanups.push(() => {
    view.unmount();
    controller.dispose();
  });
  await waitFor(() => view.lastFrame()?.includes('ask anything') ?? false);
  return { view, client, frame: () => view.lastFrame() ?? '' };
}

describe('the TUI on escape sequences from stdin', () => {
  it('types the text of colored output and drops its SGR sequences', async () => {
    const screen = await chatScreen();
    expect(() => screen.view.stdin.write('\x1b[31mred\x1b[0m')).not.toThrow();
    screen.view.stdin.write(' and \x1b[1mbold\x1b[22m');
    await waitFor(() => screen.frame().includes('red and bold'));
    expect(screen.frame()).not.toMatch(/\[(31|0|1|22)m/);
    screen.view.stdin.write('\r');
    await waitFor(() => screen.client.callsOf('sendPrompt').length > 0);
    expect(screen.client.callsOf('sendPrompt')[0][1]).toBe('red and bold');
  });

  it('takes a bracketed paste of colored output as its text', async () => {
    const screen = await chatScreen();
    const colored =
      '\x1b[1;32m✓\x1b[0m passed\r\x1b[31m✗ failed\x1b[0m\x1b]8;;https://x.test\x07link\x1b]8;;\x07';
    expect(() => screen.view.stdin.write(`${PASTE_START}${colored}${PASTE_END}`)).not.toThrow();
    await waitFor(() => screen.frame().includes('✗ failed'));
    screen.view.stdin.write('\r');
    await waitFor(() => screen.client.callsOf('sendPrompt').length > 0);
    expect(screen.client.callsOf('sendPrompt')[0][1]).toBe('✓ passed\n✗ failedlink');
  });

  it('ignores sequences that are no key: a cursor position report, a device attributes answer', async () => {
    const screen = await chatScreen();
    screen.view.stdin.write('a\x1b[12;40R\x1b[?62;22cb\x1b[>1;2m\x1b[5n');
    screen.view.stdin.write('c');
    await waitFor(() => screen.frame().includes('abc'));
    expect(screen.frame()).not.toMatch(/\[(12;40R|\?62|>1|5n)/);
  });
});
