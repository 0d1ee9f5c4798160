/**
 * Contracts and quality gates. Pins:
 * - TOOLS-42: contract_rerun, contract_list_obligations, contract_waive_obligation are registered;
 *   TOOLS-32: quality_gates_posture is registered;
 * - obligations start pending; contract_rerun evaluates them (commands through the shell, which
 *   asks like bash), records results, and the contract is unsatisfied while one fails;
 * - contract_waive_obligation asks, records the reason and who waived it, and the waived
 *   obligation no longer blocks (a denial records nothing);
 * - session obligations (attach): plan_approved and no_markers follow the real plan and markers;
 * - quality_gates_posture lists contract commands with their last results and detected scripts.
 */
import { describe, expect, it } from 'vitest';
import { allTools } from '../../src/tools/index';
import { toolHarness } from '../tools/harness';

const CONTRACT = {
  contracts: {
    readme: { kind: 'file_exists', path: 'README.md', description: 'The project has a README' },
    changelog: { kind: 'file_exists', path: 'CHANGELOG.md' },
    unit: { kind: 'command', command: 'test -f README.md && echo tests ok' },
    lint: { kind: 'command', command: "echo 'lint: 2 problems' && exit 3" },
    slow: { kind: 'command', command: 'sleep 5', disabled: true },
  },
};

describe('contracts', () => {
  it('TOOLS-42 / TOOLS-32: the contract tools and quality_gates_posture are registered', () => {
    const names = allTools.map((t) => t.name);
    for (const name of [
      'contract_rerun',
      'contract_list_obligations',
      'contract_waive_obligation',
      'quality_gates_posture',
    ]) {
      expect(names).toContain(name);
    }
    expect(allTools.find((t) => t.name === 'quality_gates_posture')?.family).toBe('status');
    expect(allTools.find((t) => t.name === 'contract_rerun')?.family).toBe('planning');
  });

  it('evaluates passing and failing obligations, records results, and waives with a reason', async () => {
    const h = await toolHarness({ files: { 'README.md': '# hi\n' }, config: CONTRACT });
    const workspace = { sessionId: undefined };

    const before = await h.call('contract_list_obligations', {}, workspace);
    expect(before).toMatchObject({
      session_id: null,
      state: 'pending',
      counts: { total: 5, pending: 4, disabled: 1 },
    });
    expect(before.obligations.map((o: { id: string; status: string }) => [o.id, o.status])).toEqual([
      ['readme', 'pending'],
      ['changelog', 'pending'],
      ['unit', 'pending'],
      ['lint', 'pending'],
      ['slow', 'disabled'],
    ]);

    const rerun = await h.call('contract_rerun', {}, workspace);
    expect(rerun.evaluated).toEqual(['readme', 'changelog', 'unit', 'lint']);
    expect(h.asks.map((a) => a.title)).toEqual([
      'bash: test -f README.md && echo tests ok',
      "bash: echo 'lint: 2 problems' && exit 3",
    ]);
    expect(rerun).toMatchObject({
      state: 'unsatisfied',
      counts: { passed: 2, failed: 2, waived: 0, pending: 0, disabled: 1 },
    });
    const byId = Object.fromEntries(rerun.obligations.map((o: { id: string }) => [o.id, o]));
    expect(byId.readme).toMatchObject({
      status: 'passed',
      description: 'The project has a README',
      last_result: { status: 'passed', detail: 'README.md exists' },
    });
    expect(byId.changelog).toMatchObject({
      status: 'failed',
      last_result: { detail: 'CHANGELOG.md does not exist' },
    });
    expect(byId.unit).toMatchObject({
      status: 'passed',
      last_result: { status: 'passed', exit_code: 0, detail: 'exit 0\ntests ok' },
    });
    expect(byId.lint).toMatchObject({
      status: 'failed',
      spec: { command: "echo 'lint: 2 problems' && exit 3" },
      last_result: { exit_code: 3, detail: 'exit 3\nlint: 2 problems' },
    });

    // Only some obligations.
    const one = await h.call('contract_rerun', { obligation_ids: ['readme'] }, workspace);
    expect(one.evaluated).toEqual(['readme']);
    await expect(h.call('contract_rerun', { obligation_ids: ['nope'] }, workspace)).rejects.toThrow(
      /no obligation "nope"; known: readme, changelog/,
    );

    // A denied waiver records nothing.
    h.denyAll();
    await expect(
      h.call('contract_waive_obligation', { obligation_id: 'lint', reason: 'legacy warnings' }, workspace),
    ).rejects.toThrow(/denied/);
    expect((await h.call('contract_list_obligations', {}, workspace)).state).toBe('unsatisfied');
  });

  it('waived obligations no longer block the contract', async () => {
    const h = await toolHarness({ files: { 'README.md': '# hi\n' }, config: CONTRACT });
    const workspace = { sessionId: undefined };
    await h.call('contract_rerun', {}, workspace);
    const waived = await h.call(
      'contract_waive_obligation',
      { obligation_id: 'lint', reason: 'legacy warnings, tracked in #12' },
      workspace,
    );
    expect(h.asks.at(-1)).toMatchObject({
      tool: 'contract_waive_obligation',
      title: 'waive contract obligation "lint" (command, currently failing): legacy warnings, tracked in #12',
    });
    expect(waived).toMatchObject({
      id: 'lint',
      status: 'waived',
      last_result: { status: 'failed' },
      waiver: { reason: 'legacy warnings, tracked in #12', by: 'agent', session_id: null },
    });
    await h.call(
      'contract_waive_obligation',
      { obligation_id: 'changelog', reason: 'no releases yet' },
      workspace,
    );
    expect(await h.call('contract_list_obligations', {}, workspace)).toMatchObject({
      state: 'satisfied',
      counts: { passed: 2, waived: 2, failed: 0 },
    });

    // A workspace waiver holds in every session's contract too.
    const session = await h.app.sessions.create({ title: 'work' });
    const inSession = await h.call('contract_list_obligations', { session_id: session.id });
    expect(inSession.obligations.find((o: { id: string }) => o.id === 'lint')).toMatchObject({
      status: 'waived',
      last_result: null,
    });
    await expect(
      h.call('contract_waive_obligation', { obligation_id: 'ghost', reason: 'x' }, workspace),
    ).rejects.toThrow(/no obligation "ghost"/);
  });

  it('attaches session obligations: plan_approved and no todo markers follow the real state', async () => {
    const h = await toolHarness({ files: { 'README.md': '# hi\n' } });
    const session = await h.app.sessions.create({ title: 'feature' });
    const as = { sessionId: session.id };
    await h.app.markers.create({
      session_id: session.id,
      path: 'src/a.ts',
      kind: 'todo',
      message: 'handle the empty case',
    });

    const first = await h.call(
      'contract_rerun',
      {
        attach: {
          plan: { kind: 'plan_approved' },
          todos: { kind: 'no_markers' },
          docs: { kind: 'file_exists', path: 'README.md' },
        },
      },
      as,
    );
    expect(first.session_id).toBe(session.id);
    expect(
      first.obligations.map(
        (o: { id: string; origin: string; status: string; last_result: { detail: string } }) => [
          o.id,
          o.origin,
          o.status,
          o.last_result.detail,
        ],
      ),
    ).toEqual([
      ['docs', 'session', 'passed', 'README.md exists'],
      ['plan', 'session', 'failed', 'the session has no plan (set_plan_artifact)'],
      ['todos', 'session', 'failed', '1 open todo marker(s): src/a.ts: handle the empty case'],
    ]);

    await h.call('set_plan_artifact', { markdown: '1. do it\n' }, as);
    expect(
      (await h.call('contract_rerun', { obligation_ids: ['plan'] }, as)).obligations[1].last_result.detail,
    ).toBe('the plan is not approved yet (approve_plan or /approve)');
    await h.call('approve_plan', {}, as);
    for (const marker of await h.app.markers.list()) await h.app.markers.delete({ marker_id: marker.id });
    const done = await h.call('contract_rerun', {}, as);
    expect(done).toMatchObject({ state: 'satisfied', counts: { passed: 3 } });

    // Session obligations stay in their session; the workspace contract is empty.
    expect(await h.call('contract_list_obligations', {}, { sessionId: undefined })).toMatchObject({
      state: 'empty',
      obligations: [],
    });
    await expect(h.call('contract_rerun', { attach: { x: { kind: 'command' } } }, as)).rejects.toThrow(
      /attach.x.command/,
    );
    await expect(
      h.call(
        'contract_rerun',
        { attach: { x: { kind: 'file_exists', path: 'a' } } },
        { sessionId: undefined },
      ),
    ).rejects.toThrow(/attach: obligations attach to a session/);
    await expect(h.call('contract_list_obligations', { session_id: 'ses_nope' })).rejects.toThrow(
      /no session "ses_nope"/,
    );
  });
});

describe('quality_gates_posture', () => {
  it('lists contract commands with their last results and the detected project scripts', async () => {
    const h = await toolHarness({
      files: {
        'README.md': '# hi\n',
        'package.json': JSON.stringify({
          scripts: { test: 'vitest run', lint: 'biome check .', dev: 'vite', typecheck: 'tsc' },
        }),
        Makefile: 'test:\n\tnpm test\n',
      },
      config: {
        contracts: {
          unit: { kind: 'command', command: 'true' },
          lint: { kind: 'command', command: 'npm run lint' },
          readme: { kind: 'file_exists', path: 'README.md' },
        },
      },
    });
    const workspace = { sessionId: undefined };
    await h.call('contract_rerun', { obligation_ids: ['unit'] }, workspace);
    const posture = await h.call('quality_gates_posture', {}, workspace);
    expect(posture).toEqual({
      schema_version: 'svc.quality_gates_posture.v1',
      session_id: null,
      package_manager: 'npm',
      gates: [
        {
          id: 'unit',
          source: 'contract',
          enforced: true,
          command: 'true',
          status: 'passed',
          last_result: {
            status: 'passed',
            exit_code: 0,
            duration_ms: expect.any(Number),
            ran_at: expect.any(Number),
          },
          detected_from: null,
        },
        {
          id: 'lint',
          source: 'contract',
          enforced: true,
          command: 'npm run lint',
          status: 'pending',
          last_result: null,
          detected_from: 'package.json scripts.lint',
        },
        {
          id: 'script:test',
          source: 'package_script',
          enforced: false,
          command: 'npm test',
          status: 'unknown',
          last_result: null,
          detected_from: 'package.json scripts.test',
        },
        {
          id: 'script:typecheck',
          source: 'package_script',
          enforced: false,
          command: 'npm run typecheck',
          status: 'unknown',
          last_result: null,
          detected_from: 'package.json scripts.typecheck',
        },
        {
          id: 'make:test',
          source: 'makefile',
          enforced: false,
          command: 'make test',
          status: 'unknown',
          last_result: null,
          detected_from: 'Makefile target test',
        },
      ],
      summary: { total: 5, enforced: 2, passing: 1, failing: 0, unknown: 4, waived: 0 },
      warnings: [],
    });
  });

  it('warns when there are no gates at all', async () => {
    const h = await toolHarness();
    expect(await h.call('quality_gates_posture', {}, { sessionId: undefined })).toMatchObject({
      gates: [],
      summary: { total: 0 },
      warnings: [expect.stringMatching(/no quality gates/)],
    });
  });
});
