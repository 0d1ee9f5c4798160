/**
 * The TUI's slash commands and dashboard view, driven through the whole app with a fake client.
 * Pins: DASH-48..52, DASH-57, LIM-02, CLI-19, TOOLS-46, TOOLS-49, AUTH-15, OPMODE-49 and the
 * command palette.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/surfaces/tui/commands';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp, type TuiAppProps } from '../../src/surfaces/tui/ui/app';
import { DASHBOARD_TIMEOUT_MS } from '../../src/surfaces/tui/ui/dialogs/dashboard-view';
import { type FakeClient, fakeClient, tick, waitFor } from './fake-client';

function dashboardPayload(sessionId?: string, generated = 1_700_000_000) {
  return {
    schema_version: 'svc.multiplayer_coordination_dashboard.v1',
    generated_at_unix: generated,
    filters_applied: { recent_runs_limit: 5, ...(sessionId ? { session_id: sessionId } : {}) },
    reference_traces: [
      {
        fixture_file: 'a.json',
        trace_id: 'trace-concurrent-1',
        scenario_kind: 'concurrent',
        step_count: 6,
        actor_count: 2,
        maturity_label: 'reference_corpus',
      },
    ],
    live_export: {
      available: true,
      cli_command: 'svc stigmergy multiplayer export',
      maturity_label: 'code_backed',
      notes: 'n',
    },
    conformance_profile: {
      profile_id: 'multiplayer_reference_trace_corpus',
      maturity_label: 'reference_corpus',
      corpus_valid: true,
    },
    ...(sessionId
      ? {
          operator_runtime: {
            schema_version: 1,
            profile: 'svc',
            session_id: sessionId,
            checks: {
              actor_identity: { status: 'present', summary: 'ACTOR-DETAIL', sources: [] },
              authority_boundary: { status: 'partial', summary: 'AUTH-DETAIL', sources: [] },
              workspace_state: { status: 'advisory', summary: 'WS-DETAIL', sources: [] },
            },
            recent_runs: [{ run_id: 'run_1' }],
            warnings: ['no_recent_runs'],
          },
        }
      : {}),
    mutation_boundary: 'read-only dashboard',
    coordination_posture_note: 'note',
    warnings: [],
  };
}

async function openApp(client: FakeClient, props: Partial<TuiAppProps> = {}, sessionId?: string) {
  const controller = createChatController(client, { store: { intervalMs: 0 } });
  if (sessionId) await controller.open(sessionId);
  const view = render(<TuiApp controller={controller} armDelayMs={0} {...props} />);
  await tick();
  const type = async (text: string) => {
    view.stdin.write(text);
    await tick();
    view.stdin.write('\r');
    await tick(60);
  };
  return { ...view, controller, type, frame: () => view.lastFrame() ?? '' };
}

/**
 * The tool calls a command made (the TUI's own start-up reads left out: the status line's model
 * selection and spend, and the once-only sandbox notice).
 */
const STARTUP_READS = new Set(['get_model_selection', 'sandbox_status', 'stats_report']);
const toolCalls = (client: ReturnType<typeof fakeClient>) =>
  client.callsOf('callTool').filter((call) => !STARTUP_READS.has(call[0] as string));

describe('TUI slash commands', () => {
  it('CLI-19: every required slash command is recognized', () => {
    for (const name of [
      'model',
      'model-selection',
      'provider-status',
      'config-status',
      'tools',
      'capabilities',
      'agent_kinds',
      'enqueue',
      'approve',
      'pack',
      'cognition',
    ]) {
      expect(parseCommand(`/${name}`)?.command.name, name).toBe(name);
    }
    for (const name of ['help', 'sessions', 'new', 'compact', 'undo', 'mcp', 'multiplayer_dashboard']) {
      expect(parseCommand(`/${name}`)?.command.name).toBe(name);
    }
    expect(parseCommand('/model fake/m2')).toMatchObject({ command: { name: 'model' }, args: 'fake/m2' });
    expect(parseCommand('/nope')).toBeUndefined();
  });

  it('the status line names the model the next turn would use before any run', async () => {
    const client = fakeClient();
    client.tools.get_model_selection = () => ({ selector: 'fake/next-model', source: 'config models.large' });
    const app = await openApp(client);
    await waitFor(() => app.frame().includes('fake/next-model'));
    expect(app.frame()).not.toContain('default model');
    app.unmount();
  });

  it('CLI-19: a readout command reads its tool, the same one as the CLI twin', async () => {
    const client = fakeClient();
    client.tools.get_model_selection = () => ({ selector: 'fake/m1', source: 'config models.large' });
    const app = await openApp(client);
    await app.type('/model-selection');
    await waitFor(() => app.frame().includes('config models.large'));
    expect(client.callsOf('callTool').at(-1)![0]).toBe('get_model_selection');
    expect(app.frame()).toContain('/model-selection');
    app.unmount();
  });

  it('shows one clear line when a readout tool is not in this build', async () => {
    const client = fakeClient();
    const app = await openApp(client);
    await app.type('/mcp');
    await waitFor(() => app.frame().includes('not available'));
    expect(app.frame()).toMatch(/not available: (mcp_status|get_mcp_status) is not available in this build/);
    app.unmount();
  });

  it.each([
    ['DASH-48', '/multiplayer_dashboard'],
    ['DASH-49', '/multiplayer-coordination-dashboard'],
    ['DASH-50', '/multiplayer_coordination_dashboard'],
  ])('%s: %s opens the scrollable summary', async (_id, line) => {
    const client = fakeClient();
    client.tools.get_multiplayer_coordination_dashboard = () => dashboardPayload();
    const app = await openApp(client);
    await app.type(line);
    await waitFor(() => app.frame().includes('trace-concurrent-1'));
    expect(app.frame()).toContain('Multiplayer coordination dashboard');
    expect(app.frame()).toContain('reference traces (1)');
    expect(app.frame()).toContain('corpus_valid=true');
    app.unmount();
  });

  it('DASH-51: r reloads the dashboard', async () => {
    const client = fakeClient();
    let generated = 100;
    client.tools.get_multiplayer_coordination_dashboard = () => dashboardPayload(undefined, ++generated);
    const app = await openApp(client);
    await app.type('/multiplayer_dashboard');
    await waitFor(() => app.frame().includes('generated 101'));
    app.stdin.write('r');
    await waitFor(() => app.frame().includes('generated 102'));
    expect(toolCalls(client)).toHaveLength(2);
    app.unmount();
  });

  it('DASH-52 / DASH-57: defaults to the active session; operator_runtime is a one-line stub', async () => {
    const client = fakeClient();
    client.tools.get_multiplayer_coordination_dashboard = (input) =>
      dashboardPayload(input.session_id as string | undefined);
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/multiplayer_dashboard');
    await waitFor(() => app.frame().includes('operator runtime'));
    expect(toolCalls(client)[0]).toEqual([
      'get_multiplayer_coordination_dashboard',
      { session_id: 'ses_1' },
      'ses_1',
    ]);
    const runtimeLines = app
      .frame()
      .split('\n')
      .filter((l) => l.includes('operator runtime'));
    expect(runtimeLines).toHaveLength(1);
    expect(runtimeLines[0]).toContain(
      'session ses_1 · 3 checks (1 present, 1 partial, 1 advisory) · 1 recent runs',
    );
    // The check details stay out of the TUI summary.
    expect(app.frame()).not.toContain('ACTOR-DETAIL');
    app.unmount();
  });

  it('LIM-02: a slow dashboard load gives up after 2 seconds', async () => {
    expect(DASHBOARD_TIMEOUT_MS).toBe(2000);
    const client = fakeClient();
    let aborted = false;
    client.tools.get_multiplayer_coordination_dashboard = (_input, signal) =>
      new Promise((resolve) => {
        signal?.addEventListener('abort', () => (aborted = true));
        setTimeout(() => resolve(dashboardPayload()), 10_000).unref();
      });
    const app = await openApp(client);
    const started = Date.now();
    await app.type('/multiplayer_dashboard');
    await waitFor(() => app.frame().includes('timed out'), 4000);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(3500);
    expect(app.frame()).toContain('load timed out after 2 s');
    expect(aborted).toBe(true);
    app.unmount();
  });

  it('TOOLS-46: /approve approves the staged plan through approve_plan', async () => {
    const client = fakeClient();
    client.tools.approve_plan = () => ({ phase: 'execute' });
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/approve');
    await waitFor(() => app.frame().includes('plan approved: phase execute'));
    expect(toolCalls(client)[0]).toEqual(['approve_plan', { session_id: 'ses_1' }, 'ses_1']);
    app.unmount();
  });

  it('TOOLS-49: ctrl+enter and /enqueue put the prompt on the session queue', async () => {
    const client = fakeClient();
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/enqueue run the tests next');
    app.stdin.write('then lint');
    await waitFor(() => app.frame().includes('then lint'));
    app.stdin.write('\n'); // ctrl+enter where the terminal sends LF (ctrl+j)
    await tick(60);
    app.stdin.write('and format');
    await waitFor(() => app.frame().includes('and format'));
    app.stdin.write('\x1b[13;5u'); // ctrl+enter under the kitty keyboard protocol
    await tick(60);
    expect(client.callsOf('enqueue')).toEqual([
      ['ses_1', 'run the tests next'],
      ['ses_1', 'then lint'],
      ['ses_1', 'and format'],
    ]);
    expect(client.callsOf('sendPrompt')).toEqual([]);
    expect(app.frame()).toContain('then lint (queued)');
    app.unmount();
  });

  it('AUTH-15: /model <name> switches the session model for the next turn', async () => {
    const client = fakeClient();
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/model fake/m2');
    await waitFor(() => app.frame().includes('model → fake/m2'));
    expect(client.callsOf('setSessionModel')).toEqual([['ses_1', 'fake/m2']]);
    await waitFor(() => app.frame().includes('fake/m2 ·'));
    app.unmount();
  });

  it('/model opens the picker; enter switches', async () => {
    const client = fakeClient();
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/model');
    await waitFor(() => app.frame().includes('fake/m1'));
    app.stdin.write('m2');
    // Enter only once the filter has narrowed the list (a loaded machine renders late).
    await waitFor(() => app.frame().includes('filter: m2'));
    app.stdin.write('\r');
    await waitFor(() => client.callsOf('setSessionModel').length === 1);
    expect(client.callsOf('setSessionModel')).toEqual([['ses_1', 'fake/m2']]);
    app.unmount();
  });

  it('OPMODE-49: /pack activates a pack through the pack controller tools', async () => {
    const client = fakeClient();
    let active = '';
    client.tools.session_list_packs = () => ({
      packs: [
        { name: 'reviewer', description: 'review only' },
        { name: 'shipper', description: '' },
      ],
    });
    client.tools.get_operating_mode = () => ({
      active_operating_pack: active,
      state: active ? 'active' : 'enabled_inactive',
    });
    client.tools.session_set_pack = (input) => {
      active = String(input.pack_path_or_name);
      return { ok: true };
    };
    client.tools.session_clear_pack = () => {
      active = '';
      return { ok: true };
    };
    const app = await openApp(client, {}, 'ses_1');
    await app.type('/pack');
    await waitFor(() => app.frame().includes('reviewer'));
    app.stdin.write('\x1b[B'); // down
    await tick();
    app.stdin.write('\r');
    await waitFor(() => app.frame().includes('active shipper'));
    expect(toolCalls(client).find((c) => c[0] === 'session_set_pack')).toEqual([
      'session_set_pack',
      { session_id: 'ses_1', pack_path_or_name: 'shipper' },
      'ses_1',
    ]);
    app.stdin.write('c');
    await waitFor(() => app.frame().includes('pack cleared'));
    expect(active).toBe('');
    app.unmount();
  });

  it('ctrl+p lists every command; typing filters and enter runs one', async () => {
    const client = fakeClient();
    client.tools.capabilities = () => ({ cli: true });
    const app = await openApp(client);
    app.stdin.write('\x10'); // ctrl+p
    await waitFor(() => app.frame().includes('Commands'));
    expect(app.frame()).toContain('/help');
    app.stdin.write('capab');
    await waitFor(() => !app.frame().includes('/sessions'));
    expect(app.frame()).toContain('/capabilities');
    expect(app.frame()).not.toContain('/sessions');
    app.stdin.write('\r');
    await waitFor(() => toolCalls(client).length === 1);
    expect(toolCalls(client)[0][0]).toBe('capabilities');
    app.unmount();
  });
});
