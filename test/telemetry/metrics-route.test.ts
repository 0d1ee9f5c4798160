/** GET /metrics (issue 21): Prometheus text behind the bearer, counting what a run spent. */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it, vi } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

const TOKEN = 'svc-test-token-metrics-1234';

describe('GET /metrics', () => {
  it('needs the bearer and shows the ledger spend as Prometheus counters', async () => {
    const { app } = await agentApp([reply().text('done').usage(70, 9)], {
      modelInfo: { cost_per_1m_in: 2, cost_per_1m_out: 10 },
      extraConfig: { services: { http: { token: TOKEN } } },
    });
    const hono = createHttpApp(app);
    expect((await hono.request('/metrics')).status).toBe(401);
    await app.agent.run({ prompt: 'hi' });
    const response = await hono.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).not.toContain(TOKEN);
    const families = parsePrometheusTextFormat(text);
    const value = (name: string, labels: Record<string, string> = {}) =>
      families
        .find((f) => f.name === name)
        ?.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
        .reduce((n, m) => n + Number(m.value), 0);
    const ledger = await app.telemetry.ledger.stats('model', 1);
    expect(ledger.rows).toEqual([expect.objectContaining({ key: 'fake/m1', calls: 1, input_tokens: 70 })]);
    expect(value('svc_model_tokens_total', { direction: 'input', model: 'm1' })).toBe(
      ledger.totals.input_tokens,
    );
    expect(value('svc_model_tokens_total', { direction: 'output' })).toBe(ledger.totals.output_tokens);
    expect(value('svc_model_cost_usd_total')).toBeCloseTo(ledger.totals.cost, 10);
    expect(value('svc_runs_total', { status: 'completed' })).toBe(1);
    expect(value('svc_queue_depth')).toBe(0);
    expect(value('svc_sse_subscribers')).toBe(0);
  });

  it('STORE-PG-70: svc_queue_depth counts the queued runs when scraped, not on run events', async () => {
    const { app } = await agentApp([], { extraConfig: { services: { http: { token: TOKEN } } } });
    const hono = createHttpApp(app);
    const scrape = async () => {
      const response = await hono.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
      const family = parsePrometheusTextFormat(await response.text()).find(
        (f) => f.name === 'svc_queue_depth',
      );
      return Number(family?.metrics[0]?.value);
    };
    const count = vi.spyOn(app.runs.queries, 'count');
    const session = await app.sessions.create();
    const queue = async () =>
      await app.runs.create({
        session_id: session.id,
        family_session_id: session.id,
        agent: 'build',
        origin: 'cli',
        prompt: 'later',
      });
    const first = await queue();
    await queue();
    await app.runs.append(first.id, 'run.enqueued', { queue: 'workspace' });
    // Creating runs and their `run.*` events count nothing: the gauge is counted when read.
    expect(count).not.toHaveBeenCalled();
    expect(await scrape()).toBe(2);
    expect(count).toHaveBeenCalledTimes(1);
    await app.runs.update(first.id, { status: 'cancelled' });
    expect(await scrape()).toBe(1);
  });
});
