/**
 * A service's first requests load nothing (issue 17 item 3): `svc service start http` loads what a
 * compat request and a scrape load on first use (the provider linking and its SDK, the AI SDK,
 * prom-client with the OpenTelemetry API) in its start-up, before it prints its listening line,
 * so no module is loaded after it is ready. The loads are listed by the bench's preload
 * (bench/profile/late-loads-preload.mjs: `Module._load` and an ESM `load` hook).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from './spawn-server';

const TOKEN = 'cold-load-token-1234';
const PRELOAD = resolve(import.meta.dirname, '../../bench/profile/late-loads-preload.mjs');

interface Load {
  kind?: 'cjs' | 'esm';
  id?: string;
  mark?: string;
  ready: boolean;
  requests: number;
}

describe('a service loads no module after it is ready', () => {
  it('COMPAT-PERF-171: three compat requests and a scrape load no module; their runs count in /metrics', async () => {
    const provider = await fakeProvider([reply().text('one'), reply().text('two'), reply().text('three')], {
      allowExtra: true,
    });
    const ws = tmpWorkspace({
      files: {
        'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[services.http]\ntoken = "${TOKEN}"\n`,
      },
    });
    const out = join(ws, 'loads.jsonl');
    const server = spawnServer(['service', 'start', 'http', '--port', '0'], {
      cwd: ws,
      env: { NODE_OPTIONS: `--import ${PRELOAD}`, LATE_LOADS_OUT: out },
      timeoutMs: 40_000,
    });
    const url = await server.ready;
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    for (const i of [0, 1, 2]) {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: 'fake/m1',
          stream: i !== 1,
          messages: [{ role: 'user', content: `hello ${i}` }],
        }),
      });
      expect(response.status).toBe(200);
      // The second one not streamed: its answer whole; the streamed ones to their end.
      const body = await response.text();
      if (i === 1) expect(JSON.parse(body).choices[0].message.content).toBe('two');
      else expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
    const metrics = await fetch(`${url}/metrics`, { headers });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('svc_runs_total{status="completed"} 3');
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);

    const loads = readFileSync(out, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Load);
    expect(loads.some((l) => l.mark === 'ready')).toBe(true);
    expect(loads.filter((l) => l.kind && l.ready).map((l) => l.id)).toEqual([]);
    // Before ready: the model path and prom-client (the preload sees them at all).
    const before = loads.filter((l) => l.kind && !l.ready).map((l) => l.id ?? '');
    expect(before.some((id) => id.includes('prom-client'))).toBe(true);
    expect(before.some((id) => /\/build-model-[\w-]+\.js$/.test(id))).toBe(true);
  });
});
