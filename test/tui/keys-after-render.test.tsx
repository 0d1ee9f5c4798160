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
import { ScrollView } from '../../src/surfaces/tui/ui/scroll-view';
import { SelectList } from '../../src/surfaces/tui/ui/select-list';
import { tick } from './fake-client';

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);

/** Content that arrives the way a readout's does: a promise settles and sets state. */
function Loaded<T>({ ready, initial, show }: { ready: Promise<T>; initial: T; show(value: T): ReactNode }) {
  const [value, setValue] = useState(initial);
  useEffect(() => {
    void ready.then(setValue);
  }, [ready]);
  return <>{show(value)}</>;
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
  const write = view.stdout.write;
  let pressed = false;
  view.stdout.write = (frame: string) => {
    write(frame);
    if (!pressed && frame.includes(marker)) {
      pressed = true;
      queueMicrotask(() => view.stdin.write(key));
    }
  };
  settle(value);
  await tick();
  expect(pressed, `a frame with ${marker}`).toBe(true);
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
    expect(view.lastFrame()).toContain('lines 17–21 of 21');
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
    expect(view.lastFrame()).toContain('lines 6–10 of 12');
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
    expect(picked).toEqual(['alpha']);
    view.unmount();
  });
});
