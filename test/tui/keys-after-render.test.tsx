/**
 * Ink subscribes a component's key handler in a passive effect after each render, so a key
 * pressed just after new content reaches the screen can reach the previous render's handler. The
 * official CI's first-hour run saw `G` on /why do nothing that way: the handler of the "loading…"
 * render scrolled to line 1. Each case presses the key as soon as the new content is written,
 * before React's passive effects (a later macrotask) re-subscribe the handler.
 */
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import { type ReactNode, useEffect, useState } from 'react';
import { describe, expect, it } from 'vitest';
import type { PermissionDecision } from '../../src/surfaces/tui/client';
import { PermissionDialog } from '../../src/surfaces/tui/ui/dialogs/permission-dialog';
import { ScrollView } from '../../src/surfaces/tui/ui/scroll-view';
import { SelectList } from '../../src/surfaces/tui/ui/select-list';
import { tick, waitFor } from './fake-client';

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);

/** Content that arrives the way a readout's does: a promise settles and sets state. */
function Loaded<T>({ ready, initial, show }: { ready: Promise<T>; initial: T; show(value: T): ReactNode }) {
  const [value, setValue] = useState(initial);
  useEffect(() => {
    void ready.then(setValue);
  }, [ready]);
  return <>{show(value)}</>;
}

/** Calls `key` on `view`'s stdin in a microtask after the first frame written that has `marker`. */
function pressAfterFrame(view: ReturnType<typeof render>, marker: string, key: string): () => boolean {
  const write = view.stdout.write;
  let pressed = false;
  view.stdout.write = (frame: string) => {
    write(frame);
    if (!pressed && frame.includes(marker)) {
      pressed = true;
      queueMicrotask(() => view.stdin.write(key));
    }
  };
  return () => pressed;
}

/** Renders, then settles `value` and presses `key` right after the first frame that has `marker`. */
async function pressOnArrival<T>(
  initial: T,
  value: T,
  show: (value: T) => ReactNode,
  marker: string,
  key: string,
) {
  let settle: (value: T) => void = () => {};
  const ready = new Promise<T>((resolve) => {
    settle = resolve;
  });
  const view = render(<Loaded ready={ready} initial={initial} show={show} />);
  await tick();
  const pressed = pressAfterFrame(view, marker, key);
  settle(value);
  await waitFor(pressed);
  return view;
}

describe('a key right after the content arrives', () => {
  it('ScrollView: G goes to the new end', async () => {
    const view = await pressOnArrival(
      ['loading…'],
      numbered(21),
      (lines) => <ScrollView lines={lines} height={5} />,
      'of 21',
      'G',
    );
    // Bounded waits, not a fixed pause: on a loaded machine the renders are macrotasks apart.
    await waitFor(() => view.lastFrame()?.includes('lines 17–21 of 21') ?? false);
    expect(view.lastFrame()).toContain('line 21');
    view.unmount();
  });

  it('ScrollView: page down moves a page of the new lines', async () => {
    const view = await pressOnArrival(
      ['loading…'],
      numbered(12),
      (lines) => <ScrollView lines={lines} height={5} />,
      'of 12',
      ' ',
    );
    await waitFor(() => view.lastFrame()?.includes('lines 6–10 of 12') ?? false);
    view.unmount();
  });

  it('SelectList: enter picks the first of the items that just arrived', async () => {
    const picked: string[] = [];
    const view = await pressOnArrival(
      [] as string[],
      ['alpha', 'beta'],
      (items) => (
        <SelectList
          items={items}
          height={5}
          keyOf={(item) => item}
          renderItem={(item) => <Text>{item}</Text>}
          onSelect={(item) => picked.push(item)}
          onCancel={() => {}}
        />
      ),
      'beta',
      '\r',
    );
    await waitFor(() => picked.length > 0);
    expect(picked).toEqual(['alpha']);
    view.unmount();
  });

  const request = (id: string) => ({
    session_id: 'ses_1',
    request_id: id,
    tool: 'edit',
    title: `edit ${id}.ts`,
    details: { path: `${id}.ts`, old_string: 'a\n', new_string: 'b\n' },
  });

  it('PermissionDialog: y right after the armed hint appears answers', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={request('perm_1')}
        height={20}
        armDelayMs={30}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    const pressed = pressAfterFrame(view, 'esc deny', 'y');
    await waitFor(() => decisions.length > 0);
    expect(pressed()).toBe(true);
    expect(decisions).toEqual(['allow_once']);
    view.unmount();
  });

  it('PermissionDialog: a new request is not armed on its first render (y then answers nothing)', async () => {
    const decisions: PermissionDecision[] = [];
    const dialog = (id: string) => (
      <PermissionDialog
        request={request(id)}
        height={20}
        armDelayMs={30}
        onDecision={(d) => decisions.push(d)}
      />
    );
    const view = render(dialog('perm_1'));
    await waitFor(() => view.lastFrame()?.includes('esc deny') ?? false);
    const pressed = pressAfterFrame(view, 'edit perm_2.ts', 'y');
    view.rerender(dialog('perm_2'));
    await waitFor(pressed);
    // Armed again (its own delay), the key long handled: it answered nothing.
    await waitFor(
      () => (view.lastFrame()?.includes('edit perm_2.ts') && view.lastFrame()?.includes('esc deny')) ?? false,
    );
    expect(decisions).toEqual([]);
    view.unmount();
  });
});
