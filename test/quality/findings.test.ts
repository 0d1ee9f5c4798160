/**
 * The finding lifecycle, fed by what real runs do. Pins:
 * - a failing `npm test` run by the agent opens a check finding with its output as evidence; the
 *   session editing a file acknowledges it; a later passing `npm test` fixes it; every transition
 *   is in the finding log and on the bus;
 * - a check piped into another command, or a command that is not a check, opens nothing;
 * - diagnostics errors from the ledger open findings that a clean, complete run fixes;
 * - reported findings move by hand (acknowledge, waive, resolve, reopen) and check findings are
 *   not resolved by hand; deleting a file or not seeing a finding for a week makes it stale;
 * - `svc config show-finding-lifecycle` prints the status and changes nothing (CLI-07), and the
 *   status tools are registered (TOOLS-32).
 */
import { existsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { STALE_AFTER_MS } from '../../src/quality/findings';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { CliBinding } from '../../src/tools/core/define-tool';
import { getFindingLifecycleStatus } from '../../src/tools/quality';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp, type TestClock } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';

const PROJECT = {
  'package.json': JSON.stringify({
    name: 'demo',
    version: '1.0.0',
    private: true,
    scripts: { test: 'node check.mjs' },
  }),
  'check.mjs':
    "import { sum } from './src/sum.mjs';\nif (sum(2, 2) !== 4) {\n  console.error(`FAIL sum(2, 2) = ${sum(2, 2)}, expected 4`);\n  process.exit(1);\n}\nconsole.log('ok 1 sum');\n",
  'src/sum.mjs': 'export const sum = (a, b) => a - b;\n',
};

const agent = (app: App, input: Record<string, unknown>, name: string, sessionId?: string) =>
  invokeTool(app, name, input, { surface: 'agent', sessionId }) as Promise<any>;

describe('finding lifecycle', () => {
  it('opens a finding for a failing npm test, acknowledges it on an edit, and a passing run fixes it', async () => {
    const { app, events } = await agentApp(
      [
        reply().toolCall('bash', { command: 'npm test' }),
        reply().toolCall('view', { path: 'src/sum.mjs' }),
        reply().toolCall('edit', { path: 'src/sum.mjs', old_string: 'a - b', new_string: 'a + b' }),
        reply().toolCall('bash', { command: 'npm test' }),
        reply().text('fixed the sum'),
      ],
      { files: PROJECT },
    );
    const run = await app.agent.run({ prompt: 'make the tests pass', yolo: true });
    expect(run.status).toBe('completed');

    const status = await agent(app, {}, 'get_finding_lifecycle_status');
    expect(status.counts).toEqual({ open: 0, acknowledged: 0, fixed: 1, waived: 0, stale: 0, total: 1 });
    expect(status.open).toEqual([]);
    const [finding] = await app.quality.findings.list();
    expect(finding).toMatchObject({
      kind: 'check',
      state: 'fixed',
      title: 'npm test failed (exit 1)',
      check_key: '.::npm test',
      check_command: 'npm test',
      check_kind: 'test',
      session_id: run.session_id,
      run_id: run.run_id,
      occurrences: 1,
    });
    expect(finding.detail).toContain('FAIL sum(2, 2) = 0, expected 4');

    const log = await agent(app, { finding_id: finding.id }, 'list_recent_finding_lifecycle_events');
    expect(log.total).toBe(3);
    expect(
      log.events.map((e: any) => [e.from_state, e.to_state, e.source, e.run_id, e.reason]).reverse(),
    ).toEqual([
      [null, 'open', 'bash', run.run_id, 'the check failed: npm test failed (exit 1)'],
      [
        'open',
        'acknowledged',
        'file_change',
        run.run_id,
        `session ${run.session_id} changed src/sum.mjs after the finding was observed`,
      ],
      ['acknowledged', 'fixed', 'bash', run.run_id, 'the check passed: npm test (exit 0)'],
    ]);
    expect(
      events.filter((e) => e.type === 'finding.changed').map((e) => [e.payload.from, e.payload.to]),
    ).toEqual([
      [null, 'open'],
      ['open', 'acknowledged'],
      ['acknowledged', 'fixed'],
    ]);
    // The evidence came from the run ledger.
    const shells = await app.runs.events(run.run_id, { types: ['local_shell_finished'] });
    expect(shells.map((e) => [e.payload.command, e.payload.exit_code, e.payload.commands])).toEqual([
      ['npm test', 1, [['npm', 'test']]],
      ['npm test', 0, [['npm', 'test']]],
    ]);
  });

  it('opens nothing for a check piped into another command, or for a command that is not a check', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('bash', { command: 'npm test 2>&1 | tail -n 3' }),
        reply().toolCall('bash', { command: 'node check.mjs' }),
        reply().toolCall('bash', { command: 'npm test || true' }),
        reply().text('looked'),
      ],
      { files: PROJECT },
    );
    await app.agent.run({ prompt: 'run things', yolo: true });
    expect((await agent(app, {}, 'get_finding_lifecycle_status')).counts.total).toBe(0);
  });

  it('follows diagnostics errors from the run ledger until a complete clean run fixes them', async () => {
    const app = await makeTestApp({ files: { 'src/a.ts': 'const x: number = "s";\n' } });
    const session = await app.sessions.create();
    const runId = (
      await app.runs.create({
        session_id: session.id,
        family_session_id: session.id,
        agent: 'build',
        origin: 'cli',
        prompt: 'check',
        status: 'running',
      })
    ).id;
    const report = async (errors: object[], complete = true) =>
      await app.runs.append(runId, 'diagnostics.reported', {
        path: 'src/a.ts',
        server: 'typescript',
        complete,
        errors,
      });
    const error = {
      line: 1,
      column: 7,
      message: "Type 'string' is not assignable to type 'number'.",
      source: 'ts',
      code: '2322',
    };
    await report([error]);
    const [opened] = await app.quality.findings.list();
    expect(opened).toMatchObject({
      kind: 'diagnostic',
      state: 'open',
      path: 'src/a.ts',
      line: 1,
      title: "src/a.ts:1:7 ts 2322: Type 'string' is not assignable to type 'number'.",
    });
    await report([{ ...error, line: 3 }]); // the same error after lines moved: one finding, seen twice
    expect(await app.quality.findings.get(opened.id)).toMatchObject({
      state: 'open',
      occurrences: 2,
      line: 3,
    });
    await report([], false); // an incomplete answer proves nothing
    expect((await app.quality.findings.get(opened.id)).state).toBe('open');
    await report([]);
    expect((await app.quality.findings.get(opened.id)).state).toBe('fixed');
    await report([error]); // it came back
    expect((await app.quality.findings.get(opened.id)).state).toBe('open');
  });

  it('moves reported findings by hand, refuses to resolve a check by hand, and goes stale', async () => {
    const app = await makeTestApp({ files: { 'src/b.ts': 'export {};\n' } });
    const clock = app.clock as TestClock;
    const session = await app.sessions.create();
    const reported = await agent(
      app,
      {
        action: 'report',
        title: 'b.ts exports nothing useful',
        path: 'src/b.ts',
        line: 1,
        detail: 'empty module',
      },
      'finding',
      session.id,
    );
    expect(reported).toMatchObject({
      kind: 'reported',
      state: 'open',
      path: 'src/b.ts',
      session_id: session.id,
    });
    expect(
      await agent(app, { action: 'acknowledge', finding_id: reported.id }, 'finding', session.id),
    ).toMatchObject({
      state: 'acknowledged',
    });
    expect(
      await agent(
        app,
        { action: 'waive', finding_id: reported.id, reason: 'intentional' },
        'finding',
        session.id,
      ),
    ).toMatchObject({ state: 'waived' });
    await expect(agent(app, { action: 'waive', finding_id: reported.id }, 'finding')).rejects.toMatchObject({
      code: 'conflict',
      message: `finding_id: finding ${reported.id} is waived; waive applies to open or acknowledged findings`,
    });
    await agent(app, { action: 'reopen', finding_id: reported.id }, 'finding');
    expect(await agent(app, { action: 'resolve', finding_id: reported.id }, 'finding')).toMatchObject({
      state: 'fixed',
    });

    // A reported finding with a check: the check's passing run fixes it (covered by the observer).
    const withCheck = await agent(
      app,
      { action: 'report', title: 'tests are red', check: 'npx vitest run src/b.test.ts' },
      'finding',
      session.id,
    );
    expect(withCheck.check_key).toBe('.::vitest run src/b.test.ts');
    await expect(
      agent(app, { action: 'report', title: 'x', check: 'ls -la' }, 'finding'),
    ).rejects.toMatchObject({
      code: 'invalid_input',
    });
    const checkFinding = await app.quality.findings.observe(
      {
        kind: 'check',
        fingerprint: 'check:.::npm test',
        title: 'npm test failed (exit 1)',
        checkKey: '.::npm test',
      },
      { source: 'bash' },
    );
    await expect(
      agent(app, { action: 'resolve', finding_id: checkFinding.id }, 'finding'),
    ).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining('run the check again'),
    });

    // Stale: the file of a diagnostic goes away; anything unseen for a week.
    const diagnostic = await app.quality.findings.observe(
      { kind: 'diagnostic', fingerprint: 'diagnostic:src/b.ts:ts::oops', title: 'oops', path: 'src/b.ts' },
      { source: 'diagnostics' },
    );
    unlinkSync(join(app.workspace, 'src/b.ts'));
    await app.quality.findings.fileChanged('src/b.ts', 'delete', {
      sessionId: session.id,
      source: 'file_change',
    });
    expect((await app.quality.findings.get(diagnostic.id)).state).toBe('stale');
    clock.advance(STALE_AFTER_MS + 1);
    const swept = await app.quality.findings.sweep({ source: 'sweep' });
    expect(swept.map((f) => f.id).sort()).toEqual([withCheck.id, checkFinding.id].sort());
    const status = await agent(app, {}, 'get_finding_lifecycle_status');
    expect(status.counts).toEqual({ open: 0, acknowledged: 0, fixed: 1, waived: 0, stale: 3, total: 4 });
  });

  it('CLI-07: svc config show-finding-lifecycle prints the status and changes nothing', async () => {
    const fresh = await makeTestApp();
    const binding = getFindingLifecycleStatus.surfaces!.cli as CliBinding;
    const empty = await viaCli(fresh, binding, {});
    expect(empty.code, empty.stderr).toBe(0);
    expect((empty.json as any).counts.total).toBe(0);
    expect(existsSync(join(fresh.dataDir, 'svc.db'))).toBe(false);

    const app = await makeTestApp();
    await app.quality.findings.observe(
      {
        kind: 'check',
        fingerprint: 'check:.::npm test',
        title: 'npm test failed (exit 1)',
        checkKey: '.::npm test',
      },
      { source: 'bash' },
    );
    const before = await viaCli(app, binding, {});
    const again = await viaCli(app, binding, {});
    expect(again.json).toEqual(before.json);
    expect((before.json as any).counts).toMatchObject({ open: 1, total: 1 });
    expect((await app.quality.findings.events()).total).toBe(1);
    const text = await viaCli(app, binding, {}, []);
    expect(text.stdout).toContain('findings: 1 open, 0 acknowledged, 0 fixed, 0 waived, 0 stale (1 total)');
    expect(text.stdout).toContain('[check, open] npm test failed (exit 1)');
  });

  it('TOOLS-32: the finding, capsule and apply_patch status reads are registered', async () => {
    const app = await makeTestApp();
    for (const name of [
      'get_apply_patch_status',
      'get_edit_capsules_status',
      'get_finding_lifecycle_status',
      'list_recent_finding_lifecycle_events',
    ]) {
      expect(app.tools.get(name), name).toBeDefined();
      expect(app.tools.get(name)?.surfaces?.mcp).toBe(`svc_${name}`);
    }
  });
});
