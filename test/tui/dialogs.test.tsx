/**
 * Each dialog on its own, with a fake client: permission (allow once / session / deny, the diff
 * or the command), sessions, Manage Providers (status, svc auth bootstrap, pasted key), first-run
 * onboarding, and the transcript (streaming markdown, reasoning collapsed, tool status, diffs).
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import type { PermissionDecision } from '../../src/surfaces/tui/client';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { Onboarding } from '../../src/surfaces/tui/ui/dialogs/onboarding';
import { PermissionDialog } from '../../src/surfaces/tui/ui/dialogs/permission-dialog';
import { ProvidersDialog } from '../../src/surfaces/tui/ui/dialogs/providers-dialog';
import { SessionList } from '../../src/surfaces/tui/ui/dialogs/session-list';
import { fakeClient, tick, waitFor } from './fake-client';

describe('permission dialog', () => {
  const request = {
    session_id: 'ses_1',
    request_id: 'perm_1',
    tool: 'edit',
    title: 'edit src/a.ts',
    details: { path: 'src/a.ts', old_string: 'const a = 1;\n', new_string: 'const a = 2;\n' },
  };

  it.each([
    ['y', 'allow_once'],
    ['s', 'allow_session'],
    ['n', 'deny'],
    ['\x1b', 'deny'],
  ])('shows the diff and answers %j with %s', async (key, decision) => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog request={request} height={20} armDelayMs={0} onDecision={(d) => decisions.push(d)} />,
    );
    await tick();
    expect(view.lastFrame()).toContain('Permission: edit');
    expect(view.lastFrame()).toContain('-const a = 1;');
    expect(view.lastFrame()).toContain('+const a = 2;');
    view.stdin.write(key);
    await tick(80);
    expect(decisions).toEqual([decision]);
    view.unmount();
  });

  it('shows the command of a shell call and ignores keys until armed', async () => {
    const decisions: PermissionDecision[] = [];
    const view = render(
      <PermissionDialog
        request={{ ...request, tool: 'bash', title: 'bash: npm test', details: { command: 'npm test' } }}
        height={20}
        armDelayMs={150}
        onDecision={(d) => decisions.push(d)}
      />,
    );
    await tick();
    expect(view.lastFrame()).toContain('$ npm test');
    view.stdin.write('y');
    await tick();
    expect(decisions).toEqual([]);
    await tick(200);
    view.stdin.write('\r');
    await tick();
    expect(decisions).toEqual(['allow_once']);
    view.unmount();
  });

  it('opens over the chat when the agent asks, and the answer goes to the session API', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    await controller.open('ses_1');
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await tick();
    client.emit('ses_1', 'tool.started', {
      session_id: 'ses_1',
      run_id: 'run_1',
      tool_call_id: 'c1',
      tool: 'edit',
      title: 'edit src/a.ts',
    });
    client.emit('ses_1', 'permission.requested', {
      session_id: 'ses_1',
      request_id: 'perm_9',
      run_id: 'run_1',
      tool: 'edit',
      title: 'edit src/a.ts',
      details: request.details,
    });
    await waitFor(() => (view.lastFrame() ?? '').includes('Permission: edit'));
    view.stdin.write('s');
    await waitFor(() => client.callsOf('answerPermission').length === 1);
    expect(client.callsOf('answerPermission')).toEqual([['ses_1', 'perm_9', 'allow_session']]);
    client.emit('ses_1', 'permission.resolved', {
      session_id: 'ses_1',
      request_id: 'perm_9',
      decision: 'allow_session',
      by: 'tui',
    });
    client.emit('ses_1', 'tool.finished', {
      session_id: 'ses_1',
      run_id: 'run_1',
      tool_call_id: 'c1',
      tool: 'edit',
      is_error: false,
      duration_ms: 12,
      summary: 'edited',
    });
    client.emit('ses_1', 'file.changed', {
      session_id: 'ses_1',
      tool: 'edit',
      path: 'src/a.ts',
      change: 'modify',
    });
    await waitFor(() => (view.lastFrame() ?? '').includes('✓ edit src/a.ts +1 -1'));
    // The diff stays in the transcript after the dialog closes.
    expect(view.lastFrame()).toContain('+const a = 2;');
    expect(view.lastFrame()).not.toContain('Permission: edit');
    view.unmount();
  });
});

describe('session list', () => {
  it('switches with enter and starts a new one with n', async () => {
    const client = fakeClient();
    const opened: string[] = [];
    let news = 0;
    const view = render(
      <SessionList
        client={client}
        activeId="ses_1"
        height={12}
        onOpen={(id) => opened.push(id)}
        onNew={() => news++}
        onCancel={() => {}}
      />,
    );
    await waitFor(() => (view.lastFrame() ?? '').includes('title of ses_2'));
    expect(view.lastFrame()).toContain('← open');
    view.stdin.write('\x1b[B');
    await tick();
    view.stdin.write('\r');
    await waitFor(() => opened.length === 1);
    expect(opened).toEqual(['ses_2']);
    view.stdin.write('n');
    await tick();
    expect(news).toBe(1);
    view.unmount();
  });
});

describe('Manage Providers', () => {
  it('AUTH-05: offers the OAuth bootstrap (the svc auth command) and starts it on o', async () => {
    const client = fakeClient();
    client.providers = [
      {
        id: 'openrouter',
        name: 'OpenRouter',
        configured: false,
        ready: false,
        detail: 'no credentials',
        auth_command: 'svc auth openrouter-kind',
        env_var: 'OPENROUTER_API_KEY',
      },
      { id: 'fake', name: 'Fake', configured: true, ready: true, detail: 'ready' },
    ];
    const started: string[] = [];
    const view = render(
      <ProvidersDialog client={client} height={20} onRunAuth={(c) => started.push(c)} onCancel={() => {}} />,
    );
    await waitFor(() => (view.lastFrame() ?? '').includes('openrouter'));
    expect(view.lastFrame()).toContain('✗ openrouter  no credentials');
    // Ready providers are listed first.
    expect(view.lastFrame()).toContain('› ✓ fake  ready');
    view.stdin.write('\x1b[B'); // down to openrouter
    await waitFor(() => (view.lastFrame() ?? '').includes('› ✗ openrouter'));
    expect(view.lastFrame()).toContain('OAuth: svc auth openrouter-kind');
    expect(view.lastFrame()).toContain('env: OPENROUTER_API_KEY');
    view.stdin.write('o');
    await tick();
    expect(started).toEqual(['svc auth openrouter-kind']);
    view.unmount();
  });

  it('pastes an API key into the credential store without showing it', async () => {
    const client = fakeClient();
    const view = render(<ProvidersDialog client={client} height={20} onCancel={() => {}} />);
    await waitFor(() => (view.lastFrame() ?? '').includes('fake'));
    view.stdin.write('k');
    await waitFor(() => (view.lastFrame() ?? '').includes('API key for fake:'));
    view.stdin.write('sk-secret-123');
    await waitFor(() => (view.lastFrame() ?? '').includes('•••••••••••••'));
    expect(view.lastFrame()).not.toContain('sk-secret-123');
    expect(view.lastFrame()).toContain('•••••••••••••');
    view.stdin.write('\r');
    await waitFor(() => (view.lastFrame() ?? '').includes('API key saved for fake in the credential store'));
    expect(client.callsOf('storeApiKey')).toEqual([['fake', 'sk-secret-123']]);
    view.unmount();
  });
});

describe('first-run onboarding', () => {
  it('opens when no provider is ready and stores the pasted key', async () => {
    const client = fakeClient();
    client.providers = [
      {
        id: 'anthropic',
        name: 'Anthropic',
        configured: false,
        ready: false,
        detail: 'no key',
        env_var: 'ANTHROPIC_API_KEY',
      },
    ];
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} onboarding armDelayMs={0} />);
    await waitFor(() => (view.lastFrame() ?? '').includes('(env ANTHROPIC_API_KEY)'));
    expect(view.lastFrame()).toContain('Welcome to svc');
    view.stdin.write('\r');
    await waitFor(() => (view.lastFrame() ?? '').includes('API key for anthropic'));
    view.stdin.write('key-abc');
    await waitFor(() => (view.lastFrame() ?? '').includes('•••••••'));
    view.stdin.write('\r');
    await waitFor(() => client.callsOf('storeApiKey').length === 1);
    expect(client.callsOf('storeApiKey')).toEqual([['anthropic', 'key-abc']]);
    await waitFor(() => !(view.lastFrame() ?? '').includes('Welcome to svc'));
    view.unmount();
  });

  it('stays closed when a provider is ready', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} onboarding />);
    await tick(80);
    expect(view.lastFrame()).not.toContain('Welcome to svc');
    view.unmount();
  });

  it('lets the user name another provider', async () => {
    const client = fakeClient();
    client.providers = [];
    let done = 0;
    const view = render(<Onboarding client={client} height={20} onDone={() => done++} />);
    await waitFor(() => (view.lastFrame() ?? '').includes('another provider'));
    view.stdin.write('\r');
    await waitFor(() => (view.lastFrame() ?? '').includes('provider id:'));
    view.stdin.write('groq');
    await waitFor(() => (view.lastFrame() ?? '').includes('groq'));
    view.stdin.write('\r');
    await waitFor(() => (view.lastFrame() ?? '').includes('API key for groq'));
    view.stdin.write('gsk');
    await waitFor(() => (view.lastFrame() ?? '').includes('•••'));
    view.stdin.write('\r');
    await waitFor(() => done === 1);
    expect(client.callsOf('storeApiKey')).toEqual([['groq', 'gsk']]);
    view.unmount();
  });
});

describe('transcript', () => {
  it('streams markdown, keeps reasoning collapsed, shows tools, usage and the title', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    await tick();
    view.stdin.write('explain a.ts');
    await tick();
    view.stdin.write('\r');
    await waitFor(() => client.callsOf('sendPrompt').length === 1);
    const id = client.callsOf('sendPrompt')[0][0] as string;
    const e = (type: string, payload: Record<string, unknown>) =>
      client.emit(id, type, { session_id: id, ...payload });
    e('state.changed', { state: 'running', run_id: 'run_1' });
    e('message.created', { message_id: 'm1', role: 'assistant', run_id: 'run_1' });
    e('message.delta', {
      message_id: 'm1',
      run_id: 'run_1',
      part: 'reasoning',
      delta: 'SECRET-THOUGHT step one\nstep two',
    });
    for (const piece of ['# Plan\n\n', 'Use **bold** and ', '`code`.\n\n```ts\nconst x = 1;\n```\n']) {
      e('message.delta', { message_id: 'm1', run_id: 'run_1', part: 'text', delta: piece });
    }
    e('tool.started', { run_id: 'run_1', tool_call_id: 'c1', tool: 'bash', title: 'bash: npm test' });
    await waitFor(() => (view.lastFrame() ?? '').includes('⋯ bash: npm test'));
    // A spinner and the elapsed time while the run works (issue 16 item 9).
    expect(view.lastFrame()).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running \d+s/);
    e('tool.finished', {
      run_id: 'run_1',
      tool_call_id: 'c1',
      tool: 'bash',
      is_error: true,
      duration_ms: 1500,
      summary: 'exit 1',
    });
    e('message.completed', { message_id: 'm1', run_id: 'run_1' });
    e('context.usage', { run_id: 'run_1', input_tokens: 5000, context_window: 10000, ratio: 0.5 });
    e('run.finished', {
      run_id: 'run_1',
      status: 'completed',
      steps: 2,
      usage: { input_tokens: 1200, output_tokens: 300 },
      cost: 0.0123,
    });
    e('state.changed', { state: 'idle' });
    await waitFor(() => (view.lastFrame() ?? '').includes('✗ bash: npm test'));
    const frame = view.lastFrame() ?? '';
    expect(frame).toContain('› explain a.ts');
    expect(frame).toContain('▸ thinking (2 lines, ctrl+o shows)');
    expect(frame).not.toContain('SECRET-THOUGHT');
    expect(frame).toContain('Plan');
    expect(frame).not.toContain('# Plan');
    expect(frame).not.toContain('**bold**');
    expect(frame).toContain('const x = 1;');
    expect(frame).toContain('exit 1  1.5s');
    expect(frame).toContain('ctx 50%');
    expect(frame).toContain('1.2k↑ 300↓');
    expect(frame).toContain('$0.0123');
    expect(frame).toContain('○ idle');
    view.stdin.write('\x0f'); // ctrl+o shows reasoning
    await tick(60);
    expect(view.lastFrame()).toContain('SECRET-THOUGHT');
    view.unmount();
  });

  it('esc cancels the active run', async () => {
    const client = fakeClient();
    const controller = createChatController(client, { store: { intervalMs: 0 } });
    await controller.open('ses_1');
    const view = render(<TuiApp controller={controller} />);
    await tick();
    client.emit('ses_1', 'state.changed', { session_id: 'ses_1', state: 'running', run_id: 'run_1' });
    await tick();
    view.stdin.write('\x1b');
    await waitFor(() => client.callsOf('cancel').length === 1);
    expect(client.callsOf('cancel')).toEqual([['ses_1']]);
    view.unmount();
  });
});
