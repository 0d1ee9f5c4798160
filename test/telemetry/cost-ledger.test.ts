/**
 * The cost ledger (issue 21): every model call a scripted run makes is recorded with provider,
 * model, purpose, tokens and catalog cost; its totals equal the run's steps plus the hidden
 * calls (a summary); the Prometheus counters match it; a spent [budget] stops the next run with
 * one clear line; with telemetry off no OpenTelemetry module is loaded.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

const prices = { cost_per_1m_in: 3, cost_per_1m_out: 15 };

describe('cost ledger', () => {
  it('totals equal the sum of the steps, the hidden summary call included', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('echo', { text: 'x' }).usage(100, 20),
        reply().text('done').usage(150, 30),
        reply().text('a summary').usage(400, 50),
      ],
      { extraTools: [echoTool], modelInfo: prices },
    );
    const result = await app.agent.run({ prompt: 'hi' });
    expect(result.status).toBe('completed');
    const run = await app.runs.require(result.run_id);
    await app.agent.summarize(run.session_id);

    const calls = await app.telemetry.ledger.calls({ sessionId: run.session_id });
    expect(calls.map((c) => c.purpose)).toEqual(['agent_step', 'agent_step', 'summary']);
    expect(calls.every((c) => c.provider === 'fake' && c.model === 'm1' && c.status === 'ok')).toBe(true);
    const steps = calls.filter((c) => c.run_id === run.id);
    expect(steps.reduce((n, c) => n + c.input_tokens, 0)).toBe(run.usage.input_tokens);
    expect(steps.reduce((n, c) => n + c.cost, 0)).toBeCloseTo(run.cost, 10);

    const byPurpose = await app.telemetry.ledger.stats('purpose', 1);
    expect(byPurpose.totals.calls).toBe(3);
    expect(byPurpose.totals.input_tokens).toBe(650);
    expect(byPurpose.totals.output_tokens).toBe(100);
    expect(byPurpose.totals.cost).toBeCloseTo((650 * 3 + 100 * 15) / 1e6, 10);
    expect(byPurpose.rows.find((r) => r.key === 'summary')?.input_tokens).toBe(400);

    const families = parsePrometheusTextFormat(await app.telemetry.metrics.render());
    const sum = (name: string, match: Record<string, string>) =>
      families
        .find((f) => f.name === name)
        ?.metrics.filter((m) => Object.entries(match).every(([k, v]) => m.labels?.[k] === v))
        .reduce((n, m) => n + Number(m.value), 0) ?? 0;
    expect(sum('svc_model_tokens_total', { direction: 'input' })).toBe(650);
    expect(sum('svc_model_tokens_total', { direction: 'output' })).toBe(100);
    expect(sum('svc_model_cost_usd_total', {})).toBeCloseTo(byPurpose.totals.cost, 10);
    expect(sum('svc_model_calls_total', { purpose: 'summary' })).toBe(1);
    expect(sum('svc_runs_total', { status: 'completed' })).toBe(1);
    expect(sum('svc_tool_calls_total', { tool: 'echo', status: 'ok' })).toBe(1);
  });

  it('time to first token and duration are measured from the stream (first text after the delays, end after the last chunk)', async () => {
    // Each chunk waits 60 ms: the role chunk, then the text in pieces, then the finish.
    const { app } = await agentApp([reply().text('one two three four').slow(60).usage(10, 4)], {
      modelInfo: prices,
    });
    const result = await app.agent.run({ prompt: 'hi' });
    expect(result.status).toBe('completed');
    const [call] = await app.telemetry.ledger.calls({ runId: result.run_id });
    expect(call.ttft_ms).not.toBeNull();
    // Two delays before the first text piece; at least one more before the stream ends.
    expect(call.ttft_ms!).toBeGreaterThanOrEqual(110);
    expect(call.duration_ms).toBeGreaterThanOrEqual(call.ttft_ms! + 55);
  });

  it('a spent session budget stops the next run with one line naming the limit and the fix', async () => {
    const { app } = await agentApp([reply().text('one').usage(1_000_000, 0), reply().text('two')], {
      modelInfo: prices,
      extraConfig: { budget: { session_usd: 2 } },
    });
    const first = await app.agent.run({ prompt: 'hi' });
    expect(first.status).toBe('completed');
    const second = await app.agent.run({
      prompt: 'again',
      sessionId: (await app.runs.require(first.run_id)).session_id,
    });
    expect(second.status).toBe('failed');
    expect(second.failure?.code).toBe('budget_exceeded');
    expect(second.failure?.summary).toMatch(/^budget spent: session \S+ cost \$3\.0000 of its \$2\.00 limit/);
    expect(second.failure?.next).toContain('budget.session_usd');
  });

  it('with telemetry off no OpenTelemetry SDK module is loaded (only otel.ts imports it, dynamically)', async () => {
    const { app } = await agentApp([reply().text('ok')]);
    await app.agent.run({ prompt: 'hi' });
    await app.telemetry.ready();
    expect(app.telemetry.endpoint).toBeNull();
    const files = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    const importers = files.filter((f) =>
      /from '@opentelemetry\//.test(readFileSync(join('src', f), 'utf8')),
    );
    expect(importers).toEqual([join('telemetry', 'otel.ts')]);
    const staticOtel = files.filter((f) =>
      /^import (?!type)[^;]*from '\.\/otel'/m.test(readFileSync(join('src', f), 'utf8')),
    );
    expect(staticOtel).toEqual([]);
  });
});
