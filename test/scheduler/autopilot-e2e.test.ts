/**
 * Autopilot end to end against the built binary (issue 5, "done when"): a job scheduled with
 * `svc schedule create` runs its prompt under `svc service start autopilot` with nobody attached,
 * and the lifecycle commands start, report and stop an autopilot daemon. Pins:
 * - GEN-04: the autopilot serves HTTP (authorized GET /v1/models answers);
 * - the scheduled prompt reaches the model and the firing completes, with no client attached;
 * - autopilot up / daemon status / autopilot down with SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS set.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from '../http/spawn-server';

function envFor(ws: string, extra: Record<string, string> = {}) {
  return { HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config'), ...extra };
}

async function poll<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('autopilot (built binary)', () => {
  it('GEN-04: runs a scheduled prompt without anyone attached', async () => {
    const provider = await fakeProvider([reply().text('Nightly summary written.')]);
    const ws = tmpWorkspace();
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
        services: { http: { token: 'e2e-token' }, autopilot: { tick_seconds: 1 } },
      }),
    );
    const created = await runBin(
      ['schedule', 'create', 'nightly', '--prompt', 'Write the nightly summary.', '--at', '+2s', '--json'],
      { cwd: ws, env: envFor(ws) },
    );
    expect(created.code, created.stderr).toBe(0);
    const schedule = JSON.parse(created.stdout).schedule;
    expect(schedule).toMatchObject({ name: 'nightly', kind: 'once', status: 'active' });

    const server = spawnServer(['service', 'start', 'autopilot', '--port', '0'], {
      cwd: ws,
      env: envFor(ws),
    });
    const url = await server.ready;
    const auth = { authorization: 'Bearer e2e-token' };
    try {
      expect((await fetch(`${url}/v1/models`, { headers: auth })).status).toBe(200);
      const done = await poll(async () => {
        const body = (await (
          await fetch(`${url}/v1/schedules/${schedule.id}`, { headers: auth })
        ).json()) as any;
        return body.schedule?.last_status === 'completed' ? body : undefined;
      }, 'the scheduled run to complete');
      expect(done.schedule).toMatchObject({ status: 'completed', run_count: 1 });
      const runId = done.runs[0].run_id;
      const run = (await (await fetch(`${url}/v1/agent-runs/${runId}`, { headers: auth })).json()) as any;
      expect(run).toMatchObject({
        run: { origin: 'scheduler', status: 'completed' },
        result_text: 'Nightly summary written.',
      });
      expect(JSON.stringify(provider.requests[0].body.messages.at(-1))).toContain(
        'Write the nightly summary.',
      );
      const status = (await (await fetch(`${url}/v1/autopilot/status`, { headers: auth })).json()) as any;
      expect(status.this_process.worker).toMatchObject({ running: true, schedules_fired: 1 });
    } finally {
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    }
  });

  it('TOOLS-28: autopilot up, daemon status and autopilot down manage a background daemon', async () => {
    const ws = tmpWorkspace();
    writeFileSync(join(ws, 'svc.toml'), stringify({ services: { http: { allow_no_auth: true } } }));
    const env = envFor(ws, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' });
    const up = await runBin(['autopilot', 'up', '--json'], { cwd: ws, env });
    expect(up.code, up.stderr).toBe(0);
    const started = JSON.parse(up.stdout);
    expect(started).toMatchObject({ started: true, kind: 'autopilot' });
    try {
      expect((await fetch(`${started.url}/v1/models`)).status).toBe(200);
      const status = await runBin(['daemon', 'status', '--json'], { cwd: ws, env });
      expect(status.code, status.stderr).toBe(0);
      const report = JSON.parse(status.stdout);
      expect(report.daemons).toEqual([
        expect.objectContaining({ kind: 'autopilot', pid: started.pid, url: started.url, alive: true }),
      ]);
      const again = await runBin(['autopilot', 'up', '--json'], { cwd: ws, env });
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/an autopilot is already running for this data dir/);
      const down = await runBin(['autopilot', 'down', '--json'], { cwd: ws, env });
      expect(down.code, down.stderr).toBe(0);
      expect(JSON.parse(down.stdout)).toMatchObject({ count: 1, stopped: [{ pid: started.pid }] });
      const after = JSON.parse((await runBin(['daemon', 'status', '--json'], { cwd: ws, env })).stdout);
      expect(after.live_daemons).toBe(0);
    } finally {
      try {
        process.kill(started.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
});
