/**
 * Issue 21: the TUI's status line shows the spend from the cost ledger (every model call made for
 * the session, the hidden summary call included, and today's total), against the `[budget]`
 * limits, on the local client and on an attached one (HTTP). The figures are the ledger's, not
 * the run totals the events carry.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { startHttpServer } from '../../src/surfaces/http/server';
import type { TuiClient } from '../../src/surfaces/tui/client';
import { createHttpClient } from '../../src/surfaces/tui/http-client';
import { createLocalClient } from '../../src/surfaces/tui/local-client';
import { createChatController } from '../../src/surfaces/tui/state/chat-controller';
import { TuiApp } from '../../src/surfaces/tui/ui/app';
import { costLabels } from '../../src/surfaces/tui/ui/status-line';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { tick, waitFor } from './fake-client';

const prices = { cost_per_1m_in: 3, cost_per_1m_out: 15 };
const TOKEN = 'spend-token-0123456789';

/** A session with one run (2 steps) and a hidden summary call, all priced. */
async function spentSession() {
  const { app } = await agentApp(
    [
      reply().text('first').usage(100_000, 1_000),
      reply().text('a summary').usage(200_000, 2_000),
      reply().text('second').usage(100_000, 1_000),
    ],
    { modelInfo: prices, extraConfig: { budget: { session_usd: 5, daily_usd: 50 } } },
  );
  const first = await app.agent.run({ prompt: 'hi' });
  expect(first.status).toBe('completed');
  const sessionId = (await app.runs.require(first.run_id)).session_id;
  await app.agent.summarize(sessionId);
  return { app, sessionId, runCost: (await app.runs.require(first.run_id)).cost };
}

async function statusLine(app: App, client: TuiClient, sessionId: string) {
  const controller = createChatController(client, { store: { intervalMs: 0 } });
  await controller.open(sessionId);
  const view = render(<TuiApp controller={controller} armDelayMs={0} />);
  onTestFinished(() => {
    view.unmount();
    controller.dispose();
  });
  const ledger = await app.telemetry.ledger.spend(sessionId);
  await waitFor(() => controller.store().getSnapshot().spend !== undefined, 10_000);
  await tick();
  return { controller, frame: view.lastFrame() ?? '', ledger };
}

describe('TUI status line: spend from the cost ledger (issue 21)', () => {
  it('local client: the session spend includes the hidden summary call; today and the limits show', async () => {
    const { app, sessionId, runCost } = await spentSession();
    const { controller, frame, ledger } = await statusLine(app, createLocalClient(app), sessionId);
    const spend = controller.store().getSnapshot().spend!;
    // 100k+200k in, 1k+2k out at $3/$15 per million.
    expect(ledger.session?.cost).toBeCloseTo((300_000 * 3 + 3_000 * 15) / 1e6, 10);
    expect(spend.session).toBeCloseTo(ledger.session!.cost, 10);
    expect(spend.session).toBeGreaterThan(runCost);
    expect(spend.today).toBeCloseTo(ledger.today.cost, 10);
    expect(spend).toMatchObject({ session_limit: 5, daily_limit: 50 });
    expect(frame).toContain(`$${ledger.session!.cost.toFixed(4)}/$5.00`);
    expect(frame).toContain(`today $${ledger.today.cost.toFixed(4)}/$50.00`);
  });

  it('attached client (HTTP): the same figures through stats_report, refreshed after the next run', async () => {
    const { app, sessionId } = await spentSession();
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, token: TOKEN },
      createApp: async () => app,
      http: { sseHeartbeatMs: 0, sseRetryMs: 50 },
    });
    onTestFinished(() => server.close('test done'));
    const client = createHttpClient({ url: server.url, token: TOKEN });
    const { controller, ledger } = await statusLine(app, client, sessionId);
    expect(controller.store().getSnapshot().spend?.session).toBeCloseTo(ledger.session!.cost, 10);

    // A second run: the run.finished event makes the status line re-read the ledger.
    await controller.send('again');
    const ledgerNow = async () => (await app.telemetry.ledger.spend(sessionId)).session!.cost;
    await waitFor(
      async () =>
        controller.store().getSnapshot().state === 'idle' &&
        Math.abs((controller.store().getSnapshot().spend?.session ?? 0) - (await ledgerNow())) < 1e-12 &&
        (await ledgerNow()) > ledger.session!.cost,
      20_000,
    );
  });

  it('without a ledger readout the status line falls back to the run totals', () => {
    expect(costLabels({ usage: { input_tokens: 0, output_tokens: 0, cost: 0.5 } })).toEqual(['$0.5000']);
    expect(
      costLabels({
        usage: { input_tokens: 0, output_tokens: 0, cost: 0.5 },
        spend: { session: 1.5, today: 12 },
      }),
    ).toEqual(['$1.50', 'today $12.00']);
  });
});
