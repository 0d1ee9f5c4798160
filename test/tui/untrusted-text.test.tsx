/**
 * Outside text in the TUI (model text, tool output, titles, permission requests) never reaches the
 * terminal as escape sequences (src/surfaces/tui/state/safe-text.ts), and the permission dialog
 * shows what is approved whole: a long command windowed from its first line with the allow keys
 * waiting for its last, its control characters shown (`^[`), an MCP call's arguments as JSON.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/errors';
import type { HistoryMessage, PermissionDecision } from '../../src/surfaces/tui/client';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { safeClient } from '../../src/surfaces/tui/state/safe-text';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { PermissionDialog } from '../../src/surfaces/tui/ui/dialogs/permission-dialog';
import { ReadoutView } from '../../src/surfaces/tui/ui/dialogs/readout-view';
import { SessionList } from '../../src/surfaces/tui/ui/dialogs/session-list';
import { ItemView } from '../../src/surfaces/tui/ui/transcript-view';
import { fakeClient, session, tick, waitFor } from './fake-client';

const ESC = '\x1b';
const TITLE_OSC = `${ESC}]0;PWNED-TITLE\x07`;
const CLIPBOARD_OSC = `${ESC}]52;c;cHduZWQ=\x07`;
const CONCEAL = `${ESC}[8m`;
const PAGE_DOWN = `${ESC}[6~`;
const PAGE_UP = `${ESC}[5~`;

/** An escape sequence other than Ink's own colors (SGR 8 conceal, any OSC). */
const foreign = (frame: string) =>
  frame.includes(`${ESC}]`) || frame.includes(CONCEAL) || frame.includes('\x07');

describe('outside text in the TUI state', () => {
  it('model text, reasoning, tool titles and summaries, failures and titles lose their escape sequences', async () => {
    const client = fakeClient({
      sessions: [session('ses_1', { title: `evil ${TITLE_OSC}title` })],
      async messages(): Promise<HistoryMessage[]> {
        return [
          {
            id: 'msg_old',
            role: 'assistant',
            run_id: 'run_0',
            parts: [{ type: 'text', text: `history ${CLIPBOARD_OSC}text` }],
          },
        ];
      },
    });
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    await controller.open('ses_1');
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await tick();
    const emit = (type: string, payload: Record<string, unknown>) =>
      client.emit('ses_1', type, { session_id: 'ses_1', run_id: 'run_1', ...payload });
    emit('message.created', { message_id: 'msg_1', role: 'assistant' });
    emit('message.delta', { message_id: 'msg_1', part: 'text', delta: `hello ${TITLE_OSC}` });
    emit('message.delta', { message_id: 'msg_1', part: 'text', delta: `${CLIPBOARD_OSC}${CONCEAL}world` });
    emit('message.delta', { message_id: 'msg_1', part: 'reasoning', delta: `think ${TITLE_OSC}` });
    emit('tool.started', { tool_call_id: 'c1', tool: 'bash', title: `bash ${TITLE_OSC}printf` });
    emit('tool.finished', {
      tool_call_id: 'c1',
      tool: 'bash',
      is_error: false,
      duration_ms: 3,
      summary: `out ${CLIPBOARD_OSC}put`,
    });
    emit('run.finished', {
      status: 'failed',
      failure: { code: 'x', summary: `failed ${TITLE_OSC}here`, next: `try ${CONCEAL}this` },
    });
    await waitFor(() => (view.lastFrame() ?? '').includes('failed here'));
    const state = controller.store().getSnapshot();
    const all = JSON.stringify(state);
    expect(all).not.toContain(ESC);
    expect(all).not.toContain('\x07');
    expect(state.title).toBe('evil title');
    const frame = view.lastFrame() ?? '';
    expect(foreign(frame)).toBe(false);
    expect(frame).toContain('bash printf');
    expect(frame).toContain('out put');
    expect(state.items.map((i) => (i.kind === 'assistant' ? i.text : ''))).toContain('history text');
    view.unmount();
    controller.dispose();
  });

  it('a permission request keeps its control characters, shown (^[), not acted on', async () => {
    const client = fakeClient({
      async pendingPermissions() {
        return [
          {
            session_id: 'ses_1',
            request_id: 'perm_0',
            tool: 'bash',
            title: `bash: ls ${CONCEAL}`,
            details: { command: `ls ${CONCEAL}# hidden` },
          },
        ];
      },
    });
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    await controller.open('ses_1');
    client.emit('ses_1', 'permission.requested', {
      session_id: 'ses_1',
      request_id: 'perm_1',
      tool: 'bash',
      title: `bash: touch x ${ESC}[2K`,
      details: { command: `touch x ${ESC}[2K\u202e` },
    });
    await tick();
    const [pending, event] = controller.store().getSnapshot().permissions;
    expect(pending.title).toBe('bash: ls ^[[8m');
    expect(pending.details?.command).toBe('ls ^[[8m# hidden');
    expect(event.title).toBe('bash: touch x ^[[2K');
    expect(event.details?.command).toBe('touch x ^[[2K<U+202E>');
    controller.dispose();
  });
});

describe('outside text in the dialogs', () => {
  it('a readout and the session list show text without its escape sequences', async () => {
    const readout = render(
      <ReadoutView
        title="/why"
        height={12}
        load={async () => ({ value: {}, text: `failed: ${TITLE_OSC}server ${CONCEAL}said no` })}
        onClose={() => {}}
      />,
    );
    await waitFor(() => (readout.lastFrame() ?? '').includes('server said no'));
    expect(foreign(readout.lastFrame() ?? '')).toBe(false);
    readout.unmount();
    // The app hands its dialogs the client that makes answers safe (state/safe-text.ts).
    const client = safeClient(
      fakeClient({ sessions: [session('ses_1', { title: `evil ${CLIPBOARD_OSC}session` })] }),
    );
    const list = render(
      <SessionList client={client} height={12} onOpen={() => {}} onNew={() => {}} onCancel={() => {}} />,
    );
    await waitFor(() => (list.lastFrame() ?? '').includes('evil session'));
    expect(foreign(list.lastFrame() ?? '')).toBe(false);
    list.unmount();
  });
});

describe('outside text in every dialog of the app (svc attach: a server answers)', () => {
  const BIDI = '\u202e';
  const evil = (word: string) => `${word} ${TITLE_OSC}${CONCEAL}${BIDI}x`;
  const clean = (word: string) => `${word} <U+202E>x`;

  it('the model picker, /undo, /pack, the dashboard and an error show no escape sequence or bidi control', async () => {
    const client = fakeClient();
    client.models = [{ selector: 'fake/m1', provider: 'fake', name: evil('model-name'), ready: true }];
    client.tools.checkpoint_list = () => ({
      checkpoints: [{ id: 'cp_1', name: evil('checkpoint-name'), created_at: 1_700_000_000 }],
    });
    client.tools.session_list_packs = () => ({ packs: [{ name: evil('pack-name'), description: 'd' }] });
    client.tools.get_operating_mode = () => ({ active_operating_pack: '', state: 'enabled_inactive' });
    client.tools.get_multiplayer_coordination_dashboard = () => {
      throw new SvcError('unavailable', evil('server-error'));
    };
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    await controller.open('ses_1');
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await tick();
    for (const [command, word] of [
      ['/model', 'model-name'],
      ['/undo', 'checkpoint-name'],
      ['/pack', 'pack-name'],
      ['/multiplayer_dashboard', 'server-error'],
    ]) {
      view.stdin.write(command);
      await tick();
      view.stdin.write('\r');
      await waitFor(() => (view.lastFrame() ?? '').includes(clean(word)));
      const frame = view.lastFrame() ?? '';
      expect(foreign(frame), command).toBe(false);
      expect(frame, command).not.toContain(BIDI);
      view.stdin.write(ESC);
      await waitFor(() => (view.lastFrame() ?? '').includes('ask anything'));
    }
    view.unmount();
    controller.dispose();
  });
});

describe('a very long line in the transcript', () => {
  it('is drawn up to 10,000 characters and says how many more there are', async () => {
    const text = `start ${'x'.repeat(200_000)} end`;
    const view = render(
      <ItemView
        item={{ kind: 'assistant', key: 'a', message_id: 'm', text, reasoning: '', done: true }}
        showReasoning={false}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(frame).toContain('start x');
    // Wrapped to the terminal's width: the rows read as one line again.
    expect(frame.replace(/\s*\n/g, ' ')).toMatch(new RegExp(`… ${text.length - 10_000} +more +characters`));
    expect(frame).not.toContain('end');
    expect(frame.length).toBeLessThan(20_000);
    view.unmount();
  });

  it('takes at most about 40 rows of the terminal it is drawn on', async () => {
    const text = `start ${'x'.repeat(10_000)} end`;
    const view = render(
      <ItemView
        item={{ kind: 'assistant', key: 'a', message_id: 'm', text, reasoning: '', done: true }}
        showReasoning={false}
        width={80}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(frame.replace(/\s*\n/g, ' ')).toMatch(new RegExp(`… ${text.length - 3200} +more +characters`));
    expect(frame.split('\n').length).toBeLessThanOrEqual(45);
    view.unmount();
  });
});

describe('permission dialog: what is approved is shown whole', () => {
  const longCommand = `touch PWNED_TOP\n${'# just listing\n'.repeat(80)}ls -la`;
  const bash = (command: string) => ({
    session_id: 'ses_1',
    request_id: 'perm_long',
    tool: 'bash',
    title: `bash: ${command.split('\n')[0]}`,
    details: { command },
  });

  it('opens a long command on its first line and allows only once its last line was shown', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={bash(longCommand)}
        height={27}
        armDelayMs={0}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    await tick();
    const first = view.lastFrame() ?? '';
    expect(first.split('\n').length).toBeLessThanOrEqual(27);
    expect(first).toContain('Permission: bash');
    expect(first).toContain('$ touch PWNED_TOP');
    expect(first).toMatch(/\+\d+ more lines · pgdn/);
    expect(first).not.toContain('ls -la');
    // Unread: y, s and enter do nothing.
    for (const key of ['y', 's', '\r']) view.stdin.write(key);
    await tick(60);
    expect(decisions).toEqual([]);
    // Page down to the end (bounded), then y allows.
    for (let i = 0; i < 20 && !(view.lastFrame() ?? '').includes('ls -la'); i++) {
      view.stdin.write(PAGE_DOWN);
      await tick(40);
    }
    const last = view.lastFrame() ?? '';
    expect(last).toContain('ls -la');
    expect(last).toContain('Permission: bash');
    expect(last.split('\n').length).toBeLessThanOrEqual(27);
    // Back at the top it stays read.
    for (let i = 0; i < 20 && !(view.lastFrame() ?? '').includes('$ touch PWNED_TOP'); i++) {
      view.stdin.write(PAGE_UP);
      await tick(40);
    }
    expect(view.lastFrame()).toContain('$ touch PWNED_TOP');
    view.stdin.write('y');
    await tick(60);
    expect(decisions).toEqual(['allow_once']);
    view.unmount();
  });

  it('denies an unread long command at once', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={bash(longCommand)}
        height={20}
        armDelayMs={0}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    await tick();
    view.stdin.write('n');
    await tick(60);
    expect(decisions).toEqual(['deny']);
    view.unmount();
  });

  it('shows the control characters of a command instead of passing them to the terminal', async () => {
    const view = render(
      <PermissionDialog
        request={bash(`touch PWNED ${CONCEAL}# ls${ESC}]0;t\x07 \u202e;x`)}
        height={20}
        armDelayMs={0}
        onDecision={() => {}}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(foreign(frame)).toBe(false);
    expect(frame).toContain('$ touch PWNED ^[[8m# ls^[]0;t^G <U+202E>;x');
    view.unmount();
  });

  it("shows an MCP call's arguments as JSON", async () => {
    const view = render(
      <PermissionDialog
        request={{
          session_id: 'ses_1',
          request_id: 'perm_mcp',
          tool: 'mcp__fs__write_file',
          title: 'write_file on MCP server fs',
          details: {
            mcp_server: 'fs',
            mcp_tool: 'write_file',
            arguments: { path: '/etc/passwd', content: `x${ESC}[8m` },
          },
        }}
        height={20}
        armDelayMs={0}
        onDecision={() => {}}
      />,
    );
    await tick();
    const frame = view.lastFrame() ?? '';
    expect(frame).toContain('mcp_server: fs');
    expect(frame).toContain('arguments: {"path":"/etc/passwd","content":"x\\u001b[8m"}');
    view.unmount();
  });
});
