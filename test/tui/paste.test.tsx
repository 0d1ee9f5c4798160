/**
 * A big paste in the TUI: a bracketed paste (the TUI turns the terminal's bracketed paste mode on)
 * reaches the key handlers as one input however many reads it took, and the prompt sends it whole
 * while it shows a placeholder (src/surfaces/tui/ui/paste.ts). A 10 MB paste took minutes when each
 * read was an edit of the whole prompt and a render.
 */
import type { Key } from 'ink';
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import type { EditorKey } from '../../src/surfaces/tui/ui/editor';
import { KeyInputRoot, PASTE_END, PASTE_START } from '../../src/surfaces/tui/ui/key-input';
import { MAX_PROMPT_CHARS } from '../../src/surfaces/tui/ui/paste';
import { useLatestInput } from '../../src/surfaces/tui/ui/use-latest-input';
import { fakeClient, manualTimers, tick, waitFor } from './fake-client';

const twoMegabytes = () =>
  Array.from({ length: 40_000 }, (_, i) => `line ${i} ${'x'.repeat(40)} end`).join('\r');

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function Keys({ seen }: { seen: [string, Key][] }) {
  useLatestInput((input, key) => {
    seen.push([input, key]);
  });
  return <Text>ready</Text>;
}

describe('a bracketed paste', () => {
  it('comes to the key handlers once, whole, with paste on its key, however many reads it took, without its escape sequences', async () => {
    const seen: [string, Key][] = [];
    const view = render(
      <KeyInputRoot>
        <Keys seen={seen} />
      </KeyInputRoot>,
    );
    await waitFor(() => view.lastFrame()?.includes('ready') ?? false);
    const text = `${twoMegabytes()}\x1b]0;title\x07`;
    view.stdin.write(`${PASTE_START}${text.slice(0, 100)}`);
    for (const part of chunks(text.slice(100), 64 * 1024)) view.stdin.write(part);
    view.stdin.write(`${PASTE_END}a`);
    await tick();
    expect(seen).toHaveLength(2);
    // The terminal's CRs are line breaks; the title sequence is gone (safeTerminalText).
    expect(seen[0][0]).toBe(twoMegabytes().replace(/\r/g, '\n'));
    expect((seen[0][1] as EditorKey).paste).toBe(true);
    expect(seen[1][0]).toBe('a');
    expect((seen[1][1] as EditorKey).paste).toBeUndefined();
    view.unmount();
  });

  it('of 2 MB into the prompt shows a placeholder and sends the text whole on enter', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await waitFor(() => view.lastFrame()?.includes('ask anything') ?? false);
    const text = twoMegabytes();
    view.stdin.write('look: ');
    view.stdin.write(PASTE_START);
    for (const part of chunks(text, 64 * 1024)) view.stdin.write(part);
    view.stdin.write(PASTE_END);
    await waitFor(() => view.lastFrame()?.includes('[Pasted text #1 +39999 lines]') ?? false);
    view.stdin.write('\r');
    await waitFor(() => client.callsOf('sendPrompt').length > 0);
    // The terminal's CRs are line breaks in the prompt, as in any paste.
    expect(client.callsOf('sendPrompt')[0][1]).toBe(`look: ${text.replace(/\r/g, '\n')}`);
    // The transcript shows the prompt's first lines and how much more it has (wrap-lines.ts).
    await waitFor(() => (view.lastFrame() ?? '').includes('line 19 x'));
    const frame = view.lastFrame() ?? '';
    expect(frame).not.toContain('line 20 x');
    expect(frame).toMatch(/… \(39980 more lines, \d+ more characters\)/);
    view.unmount();
    controller.dispose();
  });

  it('whose end marker never comes ends when no data came for a while, and the keys after it are typed', async () => {
    const seen: [string, Key][] = [];
    const timers = manualTimers();
    const view = render(
      <KeyInputRoot timers={timers}>
        <Keys seen={seen} />
      </KeyInputRoot>,
    );
    await waitFor(() => view.lastFrame()?.includes('ready') ?? false);
    view.stdin.write(`${PASTE_START}the marker`);
    view.stdin.write(' is lost');
    await tick();
    expect(seen).toHaveLength(0);
    // The idle timer: one, armed again on each read of the paste.
    expect(timers.pending).toBe(1);
    timers.fire();
    await tick();
    expect(seen).toHaveLength(1);
    expect(seen[0][0]).toBe('the marker is lost');
    expect((seen[0][1] as EditorKey).paste).toBe(true);
    expect(timers.pending).toBe(0);
    // The marker coming late is no key; what follows is typed.
    view.stdin.write(PASTE_END);
    view.stdin.write('a');
    await tick();
    expect(seen.map(([input]) => input)).toEqual(['the marker is lost', 'a']);
    view.unmount();
  });

  it('that goes past 4 MiB is said to be too big at once, held no further, and dropped until its end marker', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await waitFor(() => view.lastFrame()?.includes('ask anything') ?? false);
    const notices = () =>
      controller
        .store()
        .getSnapshot()
        .items.filter((i) => i.kind === 'notice' && i.text.includes('paste of more than 4.0 MiB not added'));
    view.stdin.write('keep ');
    view.stdin.write(PASTE_START);
    const chunk = 'z'.repeat(64 * 1024);
    for (let sent = 0; sent <= MAX_PROMPT_CHARS; sent += chunk.length) view.stdin.write(chunk);
    // Told while the paste still comes (its end may never come), not at its end.
    await waitFor(() => notices().length > 0);
    expect(notices()[0]).toMatchObject({
      level: 'warn',
      text: expect.stringContaining('save the text to a file'),
    });
    // An endless paste: as much again, and the user is told once.
    for (let sent = 0; sent <= MAX_PROMPT_CHARS; sent += chunk.length) view.stdin.write(chunk);
    view.stdin.write(PASTE_END);
    view.stdin.write('ok');
    await waitFor(() => view.lastFrame()?.includes('keep ok') ?? false);
    expect(notices()).toHaveLength(1);
    expect(view.lastFrame()).not.toContain('Pasted text');
    view.stdin.write('\r');
    await waitFor(() => client.callsOf('sendPrompt').length > 0);
    expect(client.callsOf('sendPrompt')[0][1]).toBe('keep ok');
    view.unmount();
    controller.dispose();
  });
});

describe('an OSC string typed outside a paste (a title, a hyperlink, a color answer)', () => {
  it('leaves nothing in the prompt, whole or split across reads, and the keys around it are typed', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await waitFor(() => view.lastFrame()?.includes('ask anything') ?? false);
    view.stdin.write('a\x1b]0;evil title\x07b');
    view.stdin.write('\x1b]8;;http://exam');
    await tick();
    view.stdin.write('ple.com/\x1b');
    // Ink hands a read's last ESC on alone once no more input came: the ST is split.
    await tick();
    view.stdin.write('\\c\x1b]11;rgb:0000/0000/0000\x1b\\d');
    await waitFor(() => view.lastFrame()?.includes('abcd') ?? false);
    const frame = view.lastFrame() ?? '';
    for (const part of ['evil', 'title', 'exam', 'ple.com', 'rgb', '0;', ']'])
      expect(frame).not.toContain(part);
    view.stdin.write('\r');
    await waitFor(() => client.callsOf('sendPrompt').length > 0);
    expect(client.callsOf('sendPrompt')[0][1]).toBe('abcd');
    view.unmount();
    controller.dispose();
  });
});
