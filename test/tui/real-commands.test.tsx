/**
 * Every slash command over the real in-process client and the real tools (no fake client): the
 * inputs the TUI builds must pass each tool's own schema, and the views must read what the tools
 * answer. Pins CLI-19, OPMODE-49, TOOLS-46 and AUTH-05 on real services.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { COMMANDS } from '../../src/surfaces/tui/commands';
import { createLocalClient } from '../../src/surfaces/tui/local-client';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { ProvidersDialog } from '../../src/surfaces/tui/ui/dialogs/providers-dialog';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { tick, waitFor } from './fake-client';

const WAIT_MS = 15_000;

async function openTui(app: App, options: { sessionId?: string; checkpoints?: boolean } = {}) {
  const client = createLocalClient(app);
  const controller = createChatController(client, {
    store: { intervalMs: 0 },
    checkpoints: options.checkpoints,
  });
  if (options.sessionId) await controller.open(options.sessionId);
  const view = render(<TuiApp controller={controller} armDelayMs={0} />);
  await tick();
  const frame = () => view.lastFrame() ?? '';
  const type = async (text: string) => {
    view.stdin.write(text);
    await tick();
    view.stdin.write('\r');
    await tick(60);
  };
  const until = async (check: (frame: string) => boolean) => {
    try {
      await waitFor(() => check(frame()), WAIT_MS);
    } catch {
      throw new Error(`the screen never matched; last frame:\n${frame()}`);
    }
  };
  return { ...view, controller, client, frame, type, until };
}

/** Frame text that means the TUI built an input the tool refused. */
const INPUT_ERROR = /unknown field|invalid_input|Invalid input|expected (string|number|boolean)/i;

describe('slash commands over the real tools', () => {
  it('CLI-19: every readout and dialog opens on the real tools without an input error', async () => {
    const app = await makeTestApp({
      config: {
        providers: { fake: { type: 'openai-compat', base_url: 'http://127.0.0.1:9/v1' } },
        models: { large: 'fake/m1' },
      },
    });
    const session = await app.agent.createSession({ title: 'sweep' });
    const tui = await openTui(app, { sessionId: session.id });
    const expectations: Record<string, string> = {
      'model-selection': 'large: fake/m1',
      'provider-status': 'anthropic',
      'config-status': 'data dir',
      tools: '✓ checkpoint_list',
      capabilities: 'product   svc',
      agent_kinds: 'build',
      cognition: 'operator cognition',
      multiplayer_dashboard: 'operator runtime',
      mcp: 'no MCP servers configured',
      model: 'fake/m1',
      providers: 'Manage Providers',
      sessions: 'sweep',
      help: 'Slash commands',
      undo: 'checkpoints need a git repository',
      pack: 'operating packs are off: set options.operating_packs = true',
    };
    for (const [name, text] of Object.entries(expectations)) {
      expect(COMMANDS.some((c) => c.name === name)).toBe(true);
      await tui.type(`/${name}`);
      await tui.until((f) => f.includes(text) && !f.includes('loading'));
      expect(tui.frame(), `/${name}`).not.toMatch(INPUT_ERROR);
      tui.stdin.write('\x1b');
      await tui.until((f) => f.includes('ask anything'));
    }
    tui.unmount();
  });

  it('OPMODE-49: /pack activates a pack on the routes controller: GET /v1/session-operating-mode shows it', async () => {
    const app = await makeTestApp({
      config: { options: { operating_packs: true } },
      files: {
        '.svc/packs/strict/pack.toml': 'name = "strict"\ndescription = "read-only status"\n',
      },
    });
    const session = await app.agent.createSession({ title: 'packs' });
    const tui = await openTui(app, { sessionId: session.id });
    await tui.type('/pack');
    await tui.until((f) => f.includes('strict') && f.includes('read-only status'));
    tui.stdin.write('\r');
    await tui.until((f) => f.includes('activated strict'));
    expect(tui.frame()).toContain('active strict');
    const http = createHttpApp(app, { token: 't' });
    const response = await http.request(`/v1/session-operating-mode?session_id=${session.id}`, {
      headers: { authorization: 'Bearer t' },
    });
    expect(await response.json()).toMatchObject({ active_operating_pack: 'strict', session_id: session.id });
    tui.stdin.write('c');
    await tui.until((f) => f.includes('pack cleared'));
    expect(await app.packs?.snapshot(session.id)).toMatchObject({ active_operating_pack: '' });
    tui.unmount();
  });

  it('TOOLS-46: /approve moves the staged plan to the execute phase', async () => {
    const app = await makeTestApp();
    const session = await app.agent.createSession({ title: 'plan' });
    await invokeTool(
      app,
      'set_plan_artifact',
      { session_id: session.id, markdown: '1. do it' },
      { surface: 'cli', sessionId: session.id },
    );
    const tui = await openTui(app, { sessionId: session.id });
    await tui.type('/approve');
    await tui.until((f) => f.includes('plan approved: phase execute'));
    const phase = (await invokeTool(
      app,
      'get_workflow_phase',
      { session_id: session.id },
      { surface: 'cli' },
    )) as { phase: string };
    expect(phase.phase).toBe('execute');
    tui.unmount();
  });

  it('/undo restores the checkpoint taken before the prompt', async () => {
    const { app } = await agentApp([reply().text('nothing to do')], {
      git: true,
      files: { 'notes.txt': 'first\n' },
    });
    const tui = await openTui(app, { checkpoints: true });
    await tui.type('look at notes.txt');
    await tui.until((f) => f.includes('nothing to do') && f.includes('○ idle'));
    writeFileSync(join(app.workspace, 'notes.txt'), 'changed by hand\n');
    await tui.type('/undo');
    await tui.until((f) => f.includes('before: look at notes.txt'));
    tui.stdin.write('\r');
    await tui.until((f) => f.includes('Restore "before: look at notes.txt"'));
    tui.stdin.write('y');
    await tui.until((f) => f.includes('restored before: look at notes.txt: notes.txt'));
    expect(readFileSync(join(app.workspace, 'notes.txt'), 'utf8')).toBe('first\n');
    tui.unmount();
  });

  it('/compact summarizes through summarize_session', async () => {
    const { app } = await agentApp([
      reply().text('first answer'),
      reply().text('second answer'),
      reply().text('SUMMARY: the user asked twice.'),
    ]);
    const tui = await openTui(app);
    await tui.type('first question');
    await tui.until((f) => f.includes('first answer') && f.includes('○ idle'));
    await tui.type('second question');
    await tui.until((f) => f.includes('second answer') && f.includes('○ idle'));
    await tui.type('/compact');
    await tui.until((f) => /compacted \d+ messages: \d+ → \d+ tokens/.test(f));
    tui.unmount();
  });

  it('AUTH-05: Manage Providers offers the svc auth bootstrap of the real provider rows', async () => {
    const app = await makeTestApp();
    const started: string[] = [];
    const view = render(
      <ProvidersDialog
        client={createLocalClient(app)}
        height={40}
        onRunAuth={(c) => started.push(c)}
        onCancel={() => {}}
      />,
    );
    await waitFor(() => (view.lastFrame() ?? '').includes('openrouter'), WAIT_MS);
    const selectedRow = () => (view.lastFrame() ?? '').split('\n').find((l) => l.includes('› ')) ?? '';
    for (let i = 0; i < 40 && !selectedRow().includes('openrouter'); i++) {
      const before = selectedRow();
      view.stdin.write('\x1b[B'); // down, one row at a time
      await waitFor(() => selectedRow() !== before, WAIT_MS);
    }
    // The details pane is drawn in the same render as the cursor: the frame that shows the
    // highlight on openrouter shows openrouter's details, never the previous row's.
    expect(view.lastFrame()).toContain('OAuth: svc auth openrouter');
    expect(view.lastFrame()).toContain('env: OPENROUTER_API_KEY');
    view.stdin.write('o');
    await tick();
    expect(started).toEqual(['svc auth openrouter']);
    view.unmount();
  });
});
