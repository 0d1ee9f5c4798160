/**
 * Ink subscribes a component's key handler in a passive effect after each render, so a key
 * pressed just after new content reaches the screen can reach the previous render's handler. The
 * official CI's first-hour run saw `G` on /why do nothing that way: the handler of the "loading…"
 * render scrolled to line 1. Each case presses the key as soon as the new content is written,
 * before React's passive effects (a later macrotask) re-subscribe the handler.
 */
import { Text } from 'ink';
import { render } from 'ink-testing-library';
import { type MutableRefObject, type ReactNode, useEffect, useRef, useState } from 'react';
import { describe, expect, it } from 'vitest';
import type { PermissionDecision } from '../../src/surfaces/tui/client';
import type { ChatController } from '../../src/surfaces/tui/state/chat-controller';
import type { TranscriptStore } from '../../src/surfaces/tui/state/store';
import type { RunState } from '../../src/surfaces/tui/state/transcript';
import type { Dialog } from '../../src/surfaces/tui/ui/dialog-state';
import { DashboardView } from '../../src/surfaces/tui/ui/dialogs/dashboard-view';
import { HelpView } from '../../src/surfaces/tui/ui/dialogs/help-view';
import { PermissionDialog } from '../../src/surfaces/tui/ui/dialogs/permission-dialog';
import { ReadoutView } from '../../src/surfaces/tui/ui/dialogs/readout-view';
import type { EditorState } from '../../src/surfaces/tui/ui/editor';
import { KeyInputRoot } from '../../src/surfaces/tui/ui/key-input';
import { ScrollView } from '../../src/surfaces/tui/ui/scroll-view';
import { SelectList } from '../../src/surfaces/tui/ui/select-list';
import { TextPrompt } from '../../src/surfaces/tui/ui/text-prompt';
import { usePromptEditor } from '../../src/surfaces/tui/ui/use-prompt-editor';
import { usePromptKeys } from '../../src/surfaces/tui/ui/use-prompt-keys';
import { fakeClient, tick, waitFor } from './fake-client';

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

describe('a key right after a dialog mounts (KeyInputRoot)', () => {
  it('TUI-KEYS-30: /help opening: G on its first frame goes to the end (was lost: the dialog had no handler until its passive effect)', async () => {
    const view = await pressOnArrival(
      false,
      true,
      (open) => (
        <KeyInputRoot>
          {open ? <HelpView height={12} onClose={() => {}} /> : <Text>prompt</Text>}
        </KeyInputRoot>
      ),
      'Keys',
      'G',
    );
    await waitFor(() => /lines \d+–(\d+) of \1/.test(view.lastFrame() ?? ''));
    expect(view.lastFrame()).toContain('/quit');
    view.unmount();
  });

  it('TUI-KEYS-31: a handler registered under the root takes keys, and none once it unmounts', async () => {
    const closed: string[] = [];
    const view = render(
      <KeyInputRoot>
        <HelpView height={12} onClose={() => closed.push('help')} />
      </KeyInputRoot>,
    );
    await waitFor(() => view.lastFrame()?.includes('Keys') ?? false);
    view.stdin.write('q');
    await waitFor(() => closed.length > 0);
    view.rerender(
      <KeyInputRoot>
        <Text>gone</Text>
      </KeyInputRoot>,
    );
    await waitFor(() => view.lastFrame()?.includes('gone') ?? false);
    view.stdin.write('q');
    await tick();
    expect(closed).toEqual(['help']);
    view.unmount();
  });
});

/** Where a test reads the prompt editor's ref (set as each key is handled). */
interface Probe {
  editor?: MutableRefObject<EditorState>;
}

/** The chat screen's keys over a run state and a modal flag that arrive the way the app's do. */
function ChatKeys({
  runState,
  seen,
  modal = false,
  probe,
}: {
  runState: RunState;
  seen: string[];
  modal?: boolean;
  probe?: Probe;
}) {
  const prompt = usePromptEditor(undefined);
  if (probe) probe.editor = prompt.editorRef;
  const dialogRef = useRef<Dialog | undefined>(undefined);
  const controller = {
    cancel: async () => void seen.push('cancel'),
    notice: (_level: string, text: string) => void seen.push(`notice: ${text}`),
  } as unknown as ChatController;
  const store = { getSnapshot: () => ({ permissions: [] }) } as unknown as TranscriptStore;
  usePromptKeys({
    controller,
    store,
    runState,
    modal,
    dialogRef,
    setDialog: () => {},
    prompt,
    runCommand: () => {},
    toggleReasoning: () => {},
    exit: () => void seen.push('exit'),
  });
  return (
    <Text>
      run {runState} · {modal ? 'dialog open' : 'prompt'} · typed [{prompt.editor.value}]
    </Text>
  );
}

describe('every key handler acts on the render on screen (useLatestInput)', () => {
  it('TUI-KEYS-10: HelpView: q right after a new owner is drawn closes with that owner', async () => {
    const closed: string[] = [];
    const view = await pressOnArrival(
      'first',
      'second',
      (owner) => (
        <>
          <Text>owner {owner}</Text>
          <HelpView height={10} onClose={() => closed.push(owner)} />
        </>
      ),
      'owner second',
      'q',
    );
    await waitFor(() => closed.length > 0);
    expect(closed).toEqual(['second']);
    view.unmount();
  });

  it('TUI-KEYS-11: DashboardView: q on the first frame that shows it inactive closes nothing', async () => {
    const closed: string[] = [];
    const client = fakeClient({
      callTool: async () => ({ value: { schema_version: 1, warnings: [] } }),
    } as never);
    const view = await pressOnArrival(
      true,
      false,
      (active) => (
        <>
          <Text>{active ? 'dashboard owns the keys' : 'a request is on top'}</Text>
          <DashboardView
            client={client}
            height={12}
            isActive={active}
            onClose={() => closed.push('closed')}
          />
        </>
      ),
      'a request is on top',
      'q',
    );
    // Ink hands a key to its handlers while the write to stdin runs: the key is handled by now.
    expect(closed).toEqual([]);
    view.unmount();
  });

  it('TUI-KEYS-12: ReadoutView: q right after a new owner is drawn closes with that owner', async () => {
    const closed: string[] = [];
    const load = async () => ({ value: null, text: 'one\ntwo' });
    const view = await pressOnArrival(
      'first',
      'second',
      (owner) => (
        <>
          <Text>owner {owner}</Text>
          <ReadoutView title="why" load={load as never} height={12} onClose={() => closed.push(owner)} />
        </>
      ),
      'owner second',
      'q',
    );
    await waitFor(() => closed.length > 0);
    expect(closed).toEqual(['second']);
    view.unmount();
  });

  it('TUI-KEYS-13: TextPrompt: enter on the first frame of the next step submits to that step', async () => {
    const submitted: string[] = [];
    const view = await pressOnArrival(
      1,
      2,
      (step) => (
        <TextPrompt
          label={`step ${step}`}
          onSubmit={(value) => submitted.push(`${step}:${value}`)}
          onCancel={() => {}}
        />
      ),
      'step 2',
      '\r',
    );
    await waitFor(() => submitted.length > 0);
    expect(submitted).toEqual(['2:']);
    view.unmount();
  });

  it('TUI-KEYS-14: prompt keys: ctrl+c on the first frame that shows a run running cancels it', async () => {
    const seen: string[] = [];
    const view = await pressOnArrival<RunState>(
      'idle',
      'running',
      (runState) => <ChatKeys runState={runState} seen={seen} />,
      'run running',
      '\u0003',
    );
    await waitFor(() => seen.length > 0);
    expect(seen).toEqual(['cancel']);
    view.unmount();
  });

  it('TUI-KEYS-15: prompt keys: a key typed on the first frame after a dialog closes reaches the prompt', async () => {
    const seen: string[] = [];
    const view = await pressOnArrival(
      true,
      false,
      (modal) => <ChatKeys runState="idle" seen={seen} modal={modal} />,
      'prompt',
      'x',
    );
    await waitFor(() => view.lastFrame()?.includes('typed [x]') ?? false);
    view.unmount();
  });

  it('TUI-KEYS-19: prompt keys: a key typed on the first frame that shows a dialog open leaves the prompt', async () => {
    const seen: string[] = [];
    const probe: Probe = {};
    const view = await pressOnArrival(
      false,
      true,
      (modal) => <ChatKeys runState="idle" seen={seen} modal={modal} probe={probe} />,
      'dialog open',
      'x',
    );
    // Ink hands a key to its handlers while the write to stdin runs, and the editor's ref is set
    // as the key is handled: the key is handled by now.
    expect(probe.editor?.current.value).toBe('');
    view.unmount();
  });
});

/**
 * Two keys of one read reach the same render's handler (React renders the first key's updates only
 * after both): useLatestInput cannot help there, so these handlers keep the state they move to in
 * a ref. These cases fail if those refs are dropped for the hook alone.
 */
describe('two keys in one read', () => {
  it('TUI-KEYS-16: SelectList: ↓ then enter in one read picks the second item', async () => {
    const picked: string[] = [];
    const view = render(
      <SelectList
        items={['alpha', 'beta', 'gamma']}
        height={5}
        keyOf={(item) => item}
        renderItem={(item) => <Text>{item}</Text>}
        onSelect={(item) => picked.push(item)}
        onCancel={() => {}}
      />,
    );
    await waitFor(() => view.lastFrame()?.includes('gamma') ?? false);
    await tick();
    view.stdin.write('\u001B[B\r');
    await waitFor(() => picked.length > 0);
    expect(picked).toEqual(['beta']);
    view.unmount();
  });

  it('TUI-KEYS-17: PermissionDialog: → then enter in one read answers the second choice', async () => {
    const decisions: PermissionDecision[] = [];
    const request = {
      session_id: 'ses_1',
      request_id: 'perm_1',
      tool: 'edit',
      title: 'edit perm_1.ts',
      details: { path: 'perm_1.ts', old_string: 'a\n', new_string: 'b\n' },
    };
    const view = render(
      <PermissionDialog request={request} height={20} armDelayMs={0} onDecision={(d) => decisions.push(d)} />,
    );
    await waitFor(() => view.lastFrame()?.includes('esc deny') ?? false);
    await tick();
    view.stdin.write('\u001B[C\r');
    await waitFor(() => decisions.length > 0);
    expect(decisions).toEqual(['allow_session']);
    view.unmount();
  });
});
