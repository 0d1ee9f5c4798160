/**
 * `svc attach`: the same TUI over the HTTP transport (`createHttpClient`) against a real
 * `svc` HTTP server on 127.0.0.1 (session API routes + the SSE event stream), with the agent on
 * the server running against the scripted fake provider. A prompt streams in, the permission
 * dialog shows the diff, the answer goes back over HTTP, and the edit lands on the server's
 * workspace; readouts go through each tool's own HTTP route.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startHttpServer } from '../../src/surfaces/http/server';
import { createHttpClient } from '../../src/surfaces/tui/http-client';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { tick, waitFor } from './fake-client';

const TOKEN = 'attach-token-0123456789';
const WAIT_MS = 20_000;

describe('svc attach: the TUI over HTTP + SSE', () => {
  it('runs a prompt, answers the permission over HTTP and shows the edit', { timeout: 90_000 }, async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('view', { path: 'hello.txt' }),
        reply().toolCall('edit', {
          path: 'hello.txt',
          old_string: 'hello world',
          new_string: 'goodbye world',
        }),
        reply().text('Changed the greeting.'),
      ],
      { files: { 'hello.txt': 'hello world\n' }, git: true },
    );
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, token: TOKEN },
      createApp: async () => app,
      http: { sseHeartbeatMs: 0, sseRetryMs: 50 },
    });
    onTestFinished(() => server.close('test done'));

    const client = createHttpClient({ url: server.url, token: TOKEN });
    expect(client.info()).toMatchObject({ transport: 'http', target: server.url.replace(/\/+$/, '') });
    // As `svc attach` runs it: a checkpoint before each prompt (POST /v1/checkpoints).
    const controller = createChatController(client, { store: { intervalMs: 0 }, checkpoints: true });
    const view = render(<TuiApp controller={controller} armDelayMs={0} />);
    const frame = () => view.lastFrame() ?? '';
    const until = async (check: (f: string) => boolean) => {
      try {
        await waitFor(() => check(frame()), WAIT_MS);
      } catch {
        throw new Error(`the screen never matched; last frame:\n${frame()}`);
      }
    };
    await tick();
    view.stdin.write('change the greeting');
    await tick();
    view.stdin.write('\r');

    // The server's agent asks; the request reaches the TUI over SSE with its diff.
    await until((f) => f.includes('Permission: edit'));
    expect(frame()).toContain('-hello world');
    expect(frame()).toContain('+goodbye world');
    const sessionId = controller.sessionId()!;
    expect(app.agent.pendingPermissions(sessionId)).toHaveLength(1);
    expect(frame()).toContain('[y] allow once  [s] allow for this session  [n] deny');
    view.stdin.write('y');

    await until((f) => f.includes('Changed the greeting.') && f.includes('○ idle'));
    expect(frame()).toMatch(/✓ edit hello\.txt/);
    expect(readFileSync(join(app.workspace, 'hello.txt'), 'utf8')).toBe('goodbye world\n');
    expect(app.agent.pendingPermissions(sessionId)).toEqual([]);
    // The session row on the server has the run's usage; the status line shows it.
    await until((f) => /\d+↑ \d+↓/.test(f) && !f.includes(' 0↑ 0↓'));

    // A readout through its tool's HTTP route.
    view.stdin.write('/provider-status');
    await tick();
    view.stdin.write('\r');
    await until((f) => f.includes('/provider-status ·') && f.includes('fake'));
    view.stdin.write('\x1b');
    await until((f) => f.includes('ask anything'));

    // Issue 9: /undo over attach lists the checkpoint taken before the prompt and restores it.
    view.stdin.write('/undo');
    await tick();
    view.stdin.write('\r');
    await until((f) => f.includes('before: change the greeting'));
    view.stdin.write('\r');
    await until((f) => f.includes('y restore'));
    view.stdin.write('y');
    await until((f) => f.includes('restored before: change the greeting'));
    expect(readFileSync(join(app.workspace, 'hello.txt'), 'utf8')).toBe('hello world\n');

    // History over HTTP: a second client opening the session sees the conversation.
    const again = createChatController(createHttpClient({ url: server.url, token: TOKEN }), {
      store: { intervalMs: 0 },
    });
    await again.open(sessionId);
    const items = again.store().getSnapshot().items;
    expect(items.map((i) => i.kind)).toEqual(expect.arrayContaining(['user', 'tool', 'assistant']));
    expect(items.find((i) => i.kind === 'assistant' && i.text === 'Changed the greeting.')).toBeDefined();
    again.dispose();

    view.unmount();
    controller.dispose();
    await client.close();
    expect(provider.unexpected).toEqual([]);
  });

  it('says what is wrong with a bad token', async () => {
    const { app } = await agentApp([]);
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, token: TOKEN },
      createApp: async () => app,
    });
    onTestFinished(() => server.close('test done'));
    const client = createHttpClient({ url: server.url, token: 'wrong' });
    await expect(client.listSessions({ limit: 1 })).rejects.toMatchObject({
      code: 'unauthorized',
      message: expect.stringContaining('pass --token or set SVC_HTTP_TOKEN'),
    });
  });
});
