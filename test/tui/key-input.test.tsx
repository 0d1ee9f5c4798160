/**
 * Whatever bytes stdin gives the TUI, it keeps running and keeps taking keys. Ink's key parser
 * threw on an SGR sequence (`ESC [31m`: its legacy parser reads `31` as a modifier with ctrl and
 * finds no key name, and `useInput` then calls `.startsWith` on undefined), which stopped the TUI
 * when a person pasted colored terminal output. ui/key-input.tsx hands Ink's key listeners only
 * the keys Ink knows, and a paste's text whole, with its escape sequences removed; a terminal
 * string (OSC, DCS, APC, PM, SOS) leaves nothing; ui/stdin-guard.ts keeps Ink from holding an
 * endless escape sequence.
 */
import { Box, Text, useInput, useStdin } from 'ink';
import { render } from 'ink-testing-library';
import { useEffect, useRef, useState } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { type EditorState, EMPTY, editKey } from '../../src/surfaces/tui/ui/editor';
import { InputBox } from '../../src/surfaces/tui/ui/input-box';
import { KeyInputRoot, PASTE_END, PASTE_START } from '../../src/surfaces/tui/ui/key-input';
import { createSequenceGuard, guardStdin, MAX_SEQUENCE_CHARS } from '../../src/surfaces/tui/ui/stdin-guard';
import { useLatestInput } from '../../src/surfaces/tui/ui/use-latest-input';
import { fakeClient, manualTimers, tick, waitFor } from './fake-client';

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

/** Ink's raw input events, before any filter, as lengths. */
function RawEvents({ lengths }: { lengths: number[] }) {
  const { internal_eventEmitter: events } = useStdin();
  useInput(() => {});
  useEffect(() => {
    const listener = (input: string) => lengths.push(input.length);
    events?.on('input', listener);
    return () => {
      events?.off('input', listener);
    };
  }, [events, lengths]);
  return <Text>raw</Text>;
}

describe('terminal strings and endless sequences from stdin', () => {
  it('drops DCS, APC, PM and SOS strings and their C1 forms whole, in one read or split, and types the keys around them', async () => {
    const screen = await chatScreen();
    // An XTGETTCAP answer, a kitty graphics answer (split across reads), a PM, a SOS.
    screen.view.stdin.write('a\x1bP1+r544e=787465726d\x1b\\b\x1b_Gi=31;');
    await tick();
    screen.view.stdin.write('OK\x1b\\c\x1b^pm text\x1b\\\x1bXsos text\x1b\\d');
    // The one-character forms: OSC ended by BEL, DCS and APC by the C1 ST.
    screen.view.stdin.write('\x9d0;evil\x07e\x90$r0m\x9cf\x9fGi=1');
    await tick();
    screen.view.stdin.write(';OK\x9cg');
    await waitFor(() => screen.frame().includes('abcdefg'));
    for (const part of ['544e', 'Gi=', ';OK', 'pm text', 'sos text', 'evil', '$r'])
      expect(screen.frame()).not.toContain(part);
    screen.view.stdin.write('\r');
    await waitFor(() => screen.client.callsOf('sendPrompt').length > 0);
    expect(screen.client.callsOf('sendPrompt')[0][1]).toBe('abcdefg');
  });

  it(`keeps Ink from holding an endless CSI past ${MAX_SEQUENCE_CHARS} characters (stdin-guard.ts)`, async () => {
    const lengths: number[] = [];
    const view = render(<RawEvents lengths={lengths} />);
    const guard = createSequenceGuard();
    const unguard = guardStdin(view.stdin as unknown as NodeJS.ReadStream, guard);
    cleanups.push(() => {
      unguard();
      view.unmount();
    });
    await waitFor(() => view.lastFrame()?.includes('raw') ?? false);
    // 256 KiB of parameter bytes and no final byte, in reads of 1 KiB, all in one burst.
    view.stdin.write('\x1b[');
    for (let i = 0; i < 256; i++) {
      view.stdin.write('1;'.repeat(512));
      expect(guard.held()).toBeLessThanOrEqual(MAX_SEQUENCE_CHARS);
    }
    await tick();
    view.stdin.write('ok');
    await waitFor(() => lengths.at(-1) === 2);
    // Ink held it up to the bound and handed it on then; the rest never reached it.
    expect(lengths).toEqual([MAX_SEQUENCE_CHARS + 1, 2]);
  });

  it('takes keys after an endless CSI in the chat screen, and types none of it', async () => {
    const screen = await chatScreen();
    const unguard = guardStdin(screen.view.stdin as unknown as NodeJS.ReadStream);
    cleanups.push(unguard);
    screen.view.stdin.write('a\x1b[');
    for (let i = 0; i < 64; i++) screen.view.stdin.write('1;'.repeat(512));
    await tick();
    screen.view.stdin.write('ok');
    await waitFor(() => screen.frame().includes('aok'));
    expect(screen.frame()).not.toContain('1;');
    screen.view.stdin.write('\r');
    await waitFor(() => screen.client.callsOf('sendPrompt').length > 0);
    expect(screen.client.callsOf('sendPrompt')[0][1]).toBe('aok');
  });
});

/** A prompt as the chat screen's: each key edited in (editor.ts) and shown (input-box.tsx). */
function FuzzPrompt() {
  const editor = useRef<EditorState>(EMPTY);
  const [shown, setShown] = useState({ editor: EMPTY, keys: 0, last: '' });
  useLatestInput((input, key) => {
    const result = editKey(editor.current, input, key);
    // A prompt sent or refused starts again empty: the fuzz goes on with a short prompt.
    editor.current = result.action === 'submit' || result.refused ? EMPTY : result.state;
    setShown((s) => ({ editor: editor.current, keys: s.keys + 1, last: input }));
  });
  return (
    <Box flexDirection="column">
      <InputBox editor={shown.editor} maxRows={4} busy={false} />
      <Text>
        keys {shown.keys} last {JSON.stringify(shown.last)}
      </Text>
    </Box>
  );
}

/** mulberry32: the same strings on every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  '\x1b',
  '\x1b[',
  '\x1b]',
  '\x1bP',
  '\x1b_',
  '\x1b^',
  '\x1bX',
  '\x1b\\',
  '\x9d',
  '\x9c',
  '\x9f',
  '\x98',
  '\x07',
  '\x00',
  '\r',
  '\n',
  '\t',
  '\x7f',
  '\x08',
  '\x03',
  '\x9b',
  '\x90',
  PASTE_START,
  PASTE_END,
  '\x1b[31m',
  '\x1b[0m',
  '\x1b[1;5A',
  '\x1b[13;5u',
  '\x1b[3~',
  '\x1bOA',
  '\x1b[?1;2c',
  '\x1b[12;40R',
  '\x1b]0;title\x07',
  '\x1b]8;;https://x.test\x1b\\',
  '\x1b[200',
  '\x1b[20',
  '\ud83d',
  '\ude00',
  '😀',
  'é',
  '\u202e',
  '\ufffd',
  'a',
  'Z',
  '1',
  ';',
  ':',
  '[',
  '~',
  'u',
  'm',
  ' ',
  '/',
  '\\',
];

function fuzzInput(next: () => number): string | Buffer {
  const parts: string[] = [];
  const count = 1 + Math.floor(next() * 8);
  for (let i = 0; i < count; i++) {
    const r = next();
    if (r < 0.6) parts.push(PIECES[Math.floor(next() * PIECES.length)]);
    else if (r < 0.8) parts.push(String.fromCharCode(Math.floor(next() * 0x100)));
    else parts.push(String(Math.floor(next() * 300)));
  }
  const text = parts.join('');
  // A read that ends inside a UTF-8 character: bytes, not a string (Ink decodes them as they are).
  if (next() < 0.1) return Buffer.from(text, 'utf8').subarray(0, Math.max(1, Buffer.byteLength(text) - 1));
  return text;
}

describe('the key input on random bytes', () => {
  it('stays mounted and takes a typed key after 3,000 random reads (ESC, CSI, OSC, DCS, C1, NUL, broken UTF-8, pastes)', async () => {
    const timers = manualTimers();
    const view = render(
      <KeyInputRoot timers={timers}>
        <FuzzPrompt />
      </KeyInputRoot>,
    );
    // In front of Ink as in the TUI (run.tsx).
    const unguard = guardStdin(view.stdin as unknown as NodeJS.ReadStream);
    cleanups.push(() => {
      unguard();
      view.unmount();
    });
    await waitFor(() => view.lastFrame()?.includes('keys 0') ?? false);
    const next = random(20_251);
    for (let i = 0; i < 3000; i++) {
      view.stdin.write(fuzzInput(next) as string);
      // Now and then: Ink flushes a lone ESC, React renders, a paste left open times out.
      if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
      if (i % 50 === 49) timers.fire();
    }
    await tick();
    timers.fire();
    await tick();
    view.stdin.write('q');
    await waitFor(() => view.lastFrame()?.includes('last "q"') ?? false);
    expect(view.lastFrame()).toMatch(/keys \d+ last "q"/);
    // Nothing typed put a control character (but Ink's own ESC sequences, line breaks, tabs) or a
    // bidi control on the screen.
    const unsafe = /[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
    expect(view.frames.find((frame) => unsafe.test(frame))).toBeUndefined();
  });
});
