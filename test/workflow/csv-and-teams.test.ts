/**
 * spawn_agents_on_csv and teams. Pins: one sub-agent per row with the row rendered into the
 * prompt, rows overlapping up to max_parallel, every answer collected into a CSV (or JSON) file
 * in the workspace with its run id; unknown columns and an existing results file are refused
 * before anything runs. create_team persists a team, runs a task (coordinator plan → members in
 * parallel → coordinator answer) as child runs, falls back to the whole task for every member
 * when the plan is unreadable, refuses to redefine a team silently, and get_teams_status reports
 * members with their sessions and runs.
 */
import { chmodSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { parseCsv, toCsv } from '../../src/workflows/csv';
import { readPlan } from '../../src/workflows/team-runner';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { afterTool, childRuns, maxConcurrent, promptOf, router, toolResults } from './helpers';

const PEOPLE = 'First name,city\nAda,"London, UK"\nGrace,Arlington\nLinus,Helsinki\n';

describe('spawn_agents_on_csv', () => {
  it('runs one sub-agent per row, in parallel, and writes every answer to a results CSV', async () => {
    const { app, provider, events } = await agentApp(
      router(5, (request) => {
        const prompt = promptOf(request);
        const match = /^Greet (\w+) from (.+) \(row (\d)\)$/.exec(prompt);
        if (match) return reply().text(`Hello ${match[1]}, "${match[2]}"!`).slow(5);
        if (afterTool(request)) return reply().text('all greeted');
        return reply().toolCall('spawn_agents_on_csv', {
          csv_path: 'people.csv',
          prompt: 'Greet {{ first_name }} from {{ city }} (row {{ row_number }})',
          max_parallel: 2,
        });
      }),
      { files: { 'people.csv': PEOPLE } },
    );
    const parent = await app.agent.run({ prompt: 'greet everyone', yolo: true });
    expect(parent).toMatchObject({ status: 'completed', text: 'all greeted' });
    const prompts = provider.requests.map(promptOf).filter((p) => p.startsWith('Greet'));
    expect(prompts.sort()).toEqual([
      'Greet Ada from London, UK (row 1)',
      'Greet Grace from Arlington (row 2)',
      'Greet Linus from Helsinki (row 3)',
    ]);
    const [csvRun] = await childRuns(app, parent.run_id);
    expect(csvRun).toMatchObject({ agent: 'csv', origin: 'workflow', status: 'completed' });
    const rows = await childRuns(app, csvRun.id);
    expect(rows).toHaveLength(3);
    expect(
      maxConcurrent(
        events,
        rows.map((r) => r.id),
      ),
    ).toBe(2);

    const written = parseCsv(readFileSync(join(app.workspace, 'people.results.csv'), 'utf8'));
    expect(written.headers).toEqual([
      'agent_row',
      'First name',
      'city',
      'agent_status',
      'agent_output',
      'agent_error',
      'agent_run_id',
      'agent_session_id',
    ]);
    expect(written.rows.map((r) => [r.agent_row, r['First name'], r.agent_status, r.agent_output])).toEqual([
      ['1', 'Ada', 'completed', 'Hello Ada, "London, UK"!'],
      ['2', 'Grace', 'completed', 'Hello Grace, "Arlington"!'],
      ['3', 'Linus', 'completed', 'Hello Linus, "Helsinki"!'],
    ]);
    expect(new Set(written.rows.map((r) => r.agent_run_id))).toEqual(new Set(rows.map((r) => r.id)));
    const [result] = await toolResults(app, parent.session_id);
    expect(result.output).toBe(
      `3 of 3 rows completed (run ${csvRun.id}); results written to people.results.csv.`,
    );
  });

  it('writes JSON when asked and refuses unknown columns and an existing results file', async () => {
    const { app } = await agentApp(
      router(2, () => reply().text('ok')),
      { files: { 'people.csv': PEOPLE, 'taken.json': '{}' } },
    );
    const call = (input: Record<string, unknown>) =>
      invokeTool(app, 'spawn_agents_on_csv', input, { surface: 'cli' }) as Promise<any>;
    await expect(call({ csv_path: 'people.csv', prompt: 'Hi {{ surname }}' })).rejects.toThrow(
      'prompt: {{ surname }} is not a column; columns: First name, city (or {{ row_number }})',
    );
    await expect(
      call({ csv_path: 'people.csv', prompt: 'Hi {{ city }}', output_path: 'taken.json' }),
    ).rejects.toThrow('output_path: taken.json already exists; set overwrite: true or choose another path');
    await expect(call({ csv: 'a,b\n1,2,3\n', prompt: 'x' })).rejects.toThrow(
      'csv: row 1 has 3 fields but the header has 2',
    );
    expect(await app.runs.count()).toBe(0);
    const result = await call({
      csv: 'name\nx\ny\n',
      prompt: 'Say {{ name }}',
      output_path: 'out/results.json',
    });
    expect(result).toMatchObject({
      status: 'completed',
      rows: 2,
      completed: 2,
      format: 'json',
      output_path: 'out/results.json',
    });
    const json = JSON.parse(readFileSync(join(app.workspace, 'out/results.json'), 'utf8'));
    expect(
      json.rows.map((r: { row: number; input: unknown; output: string }) => [r.row, r.input, r.output]),
    ).toEqual([
      [1, { name: 'x' }, 'ok'],
      [2, { name: 'y' }, 'ok'],
    ]);
  });
});

describe('spawn_agents_on_csv results file', () => {
  it('never writes into .git or svc configuration, even through a symlink', async () => {
    const { app } = await agentApp([], {
      files: { '.git/hooks/pre-commit': '#!/bin/sh\n', '.svc/svc.toml': '', 'svc.toml': '' },
    });
    symlinkSync(join(app.workspace, '.git/hooks/pre-commit'), join(app.workspace, 'innocent.csv'));
    const save = (path: string) =>
      invokeTool(
        app,
        'spawn_agents_on_csv',
        { csv: 'a\n1\n', prompt: 'x', output_path: path, overwrite: true },
        { surface: 'cli' },
      );
    for (const path of ['.git/hooks/pre-commit', 'svc.toml', 'sub/.git/config', 'innocent.csv']) {
      await expect(save(path)).rejects.toThrow(
        `output_path: ${path} is in .git or svc's configuration (svc.toml, .svc/); write the results elsewhere`,
      );
    }
    // Here .svc is also the test's data dir, refused as such before this check.
    await expect(save('.svc/svc.toml')).rejects.toThrow(/^output_path: \.svc\/svc\.toml is in /);
    expect(readFileSync(join(app.workspace, '.git/hooks/pre-commit'), 'utf8')).toBe('#!/bin/sh\n');
    expect(await app.runs.count()).toBe(0);
  });

  it('replaces an existing file as a 0644 data file (no execute bit kept)', async () => {
    const { app } = await agentApp([reply().text('ok')], { files: { 'tool.sh': '#!/bin/sh\necho hi\n' } });
    chmodSync(join(app.workspace, 'tool.sh'), 0o755);
    const result = (await invokeTool(
      app,
      'spawn_agents_on_csv',
      { csv: 'a\n1\n', prompt: 'x', output_path: 'tool.sh', format: 'csv', overwrite: true },
      { surface: 'cli' },
    )) as { status: string };
    expect(result.status).toBe('completed');
    expect(readFileSync(join(app.workspace, 'tool.sh'), 'utf8')).toMatch(/^agent_row,a,agent_status/);
    expect(statSync(join(app.workspace, 'tool.sh')).mode & 0o777).toBe(0o644);
  });

  it('an agent overwrites a file only after it read it, like write (no read marked on its behalf)', async () => {
    const spawn = { csv: 'a\n1\n', prompt: 'Row {{ a }}', output_path: 'notes.csv', overwrite: true };
    const { app } = await agentApp(
      [
        reply().toolCall('spawn_agents_on_csv', spawn),
        reply().text('refused'),
        reply().toolCall('view', { path: 'notes.csv' }),
        reply().toolCall('spawn_agents_on_csv', spawn),
        reply().text('row answer'),
        reply().text('written'),
      ],
      {
        files: { 'notes.csv': 'keep me\n' },
        extraConfig: { permissions: { allowed_tools: ['spawn_agents_on_csv'] } },
      },
    );
    const first = await app.agent.run({ prompt: 'fan out', yolo: true });
    const [refused] = await toolResults(app, first.session_id);
    expect(refused).toMatchObject({ is_error: true });
    expect(refused.output).toContain('notes.csv has not been read in this session');
    expect(readFileSync(join(app.workspace, 'notes.csv'), 'utf8')).toBe('keep me\n');
    expect(await app.workflows.runs.list({ kind: 'csv' })).toEqual([]);

    const second = await app.agent.run({ prompt: 'read it, then fan out', yolo: true });
    expect(second.text).toBe('written');
    expect(readFileSync(join(app.workspace, 'notes.csv'), 'utf8')).toContain('row answer');
  });
});

const PLAN = JSON.stringify({
  assignments: [
    { member: 'researcher', task: 'Find where parsing happens' },
    { member: 'writer', task: 'Draft the summary' },
  ],
});

function teamAnswers(plan: string) {
  return router(6, (request) => {
    const prompt = promptOf(request);
    if (prompt.includes('Answer with a JSON object only')) return reply().text(plan);
    if (prompt.startsWith('Dig deep.')) return reply().text('parsing is in src/parse.ts').slow(5);
    if (prompt.startsWith('Write well.')) return reply().text('summary drafted').slow(5);
    if (prompt.includes('The members reported:'))
      return reply().text('Final: parsing lives in src/parse.ts; summary drafted.');
    return reply().text('unexpected');
  });
}

describe('create_team and get_teams_status', () => {
  it('creates a team, runs a task through coordinator and parallel members, and reports it', async () => {
    const { app, provider, events } = await agentApp(teamAnswers(PLAN));
    const created = (await invokeTool(
      app,
      'create_team',
      {
        name: 'docs',
        description: 'Documents the code',
        members: [
          { name: 'researcher', agent: 'explore', instructions: 'Dig deep.' },
          { name: 'writer', instructions: 'Write well.', tools: ['view', 'write'] },
        ],
        coordinator: { instructions: 'Be brief.' },
        task: 'Document the parser',
      },
      { surface: 'cli' },
    )) as any;
    expect(created).toMatchObject({ name: 'docs', created: true, replaced: false });
    expect(created.task).toMatchObject({
      status: 'completed',
      answer: 'Final: parsing lives in src/parse.ts; summary drafted.',
      plan: { source: 'coordinator', note: null },
    });
    expect(
      created.task.members.map((m: { member: string; assignment: string; status: string }) => [
        m.member,
        m.assignment,
        m.status,
      ]),
    ).toEqual([
      ['researcher', 'Find where parsing happens', 'completed'],
      ['writer', 'Draft the summary', 'completed'],
    ]);
    const planPrompt = promptOf(provider.requests[0]);
    expect(planPrompt).toMatch(
      /^Be brief\.\n\nYou coordinate the team "docs": Documents the code\.\nMembers:\n- researcher \(explore\): Dig deep\.\n- writer \(general; tools: view, write\): Write well\./,
    );
    // The writer got its narrowed tools.
    const writerRequest = provider.requests.find((r) => promptOf(r).startsWith('Write well.'))!;
    expect(
      writerRequest.body.tools.map((t: { function: { name: string } }) => t.function.name).sort(),
    ).toEqual(['view', 'write']);

    // Runs: plan, two members (overlapping), synthesis — all children of the task's run.
    const runs = await childRuns(app, created.task.run_id);
    expect(runs).toHaveLength(4);
    const memberRuns = created.task.members.map((m: { run_id: string }) => m.run_id);
    expect(maxConcurrent(events, memberRuns)).toBe(2);

    const status = (await invokeTool(app, 'get_teams_status', {}, { surface: 'cli' })) as any;
    expect(status.counts).toEqual({ teams: 1, tasks: 1, running_tasks: 0 });
    const team = status.teams[0];
    expect(team).toMatchObject({
      name: 'docs',
      team_id: created.team_id,
      counts: { members: 2, tasks: 1, running: 0, runs: 4, active_runs: 0 },
    });
    expect(
      team.members.map((m: { name: string; sessions: { run_id: string; status: string }[] }) => [
        m.name,
        m.sessions.map((s) => [s.run_id, s.status]),
      ]),
    ).toEqual([
      ['researcher', [[created.task.members[0].run_id, 'completed']]],
      ['writer', [[created.task.members[1].run_id, 'completed']]],
    ]);
    expect(team.coordinator.sessions.map((s: { phase: string }) => s.phase).sort()).toEqual([
      'plan',
      'synthesis',
    ]);
    expect(team.tasks).toMatchObject([
      {
        task_id: created.task.task_id,
        task: 'Document the parser',
        status: 'completed',
        run_id: created.task.run_id,
      },
    ]);
  });

  it('reuses a team for a new task, refuses a silent redefinition, and falls back when the plan is unreadable', async () => {
    const { app } = await agentApp(teamAnswers('I would ask the researcher first.'));
    const call = (input: Record<string, unknown>) =>
      invokeTool(app, 'create_team', input, { surface: 'cli' }) as Promise<any>;
    await call({
      name: 'docs',
      members: [
        { name: 'researcher', instructions: 'Dig deep.' },
        { name: 'writer', instructions: 'Write well.' },
      ],
    });
    await expect(call({ name: 'docs', members: [{ name: 'x' }] })).rejects.toThrow(
      'name: team "docs" exists; pass replace: true',
    );
    await expect(call({ name: 'ghost', task: 'x' })).rejects.toThrow(
      'members: required to create team "ghost"',
    );
    await expect(call({ name: 'bad', members: [{ name: 'a', agent: 'build' }] })).rejects.toThrow(
      'members[0].agent: "build" is not a sub-agent kind',
    );
    const result = await call({ name: 'docs', task: 'Document the lexer' });
    expect(result.created).toBe(false);
    expect(result.task.plan).toEqual({
      source: 'fallback',
      note: 'the coordinator did not answer with a readable plan; every member got the whole task',
      assignments: [
        { member: 'researcher', task: 'Document the lexer' },
        { member: 'writer', task: 'Document the lexer' },
      ],
    });
    expect(result.task.status).toBe('completed');
  });

  it('reads a plan from a fenced block, merges duplicate members and drops unknown ones', () => {
    const team = {
      id: 't',
      name: 'x',
      description: '',
      coordinator: { agent: 'general', instructions: '' },
      members: [
        { name: 'a', agent: 'general', instructions: '', tools: null },
        { name: 'b', agent: 'general', instructions: '', tools: null },
      ],
      created_at: 0,
      updated_at: 0,
    };
    const text =
      'Here:\n```json\n{"assignments":[{"member":"b","task":"one"},{"member":"zed","task":"?"},{"member":"b","task":"two"}]}\n```';
    expect(readPlan(text, team, 'T')).toEqual({
      source: 'coordinator',
      note: 'the plan named unknown members (zed); their parts were dropped',
      assignments: [{ member: 'b', task: 'one\n\ntwo' }],
    });
  });
});

describe('csv', () => {
  it('parses quotes, escaped quotes, CRLF and embedded newlines, and round-trips', () => {
    const table = parseCsv('a,b\r\n"x, y","say ""hi"""\r\n"multi\nline",\r\n');
    expect(table).toEqual({
      headers: ['a', 'b'],
      rows: [
        { a: 'x, y', b: 'say "hi"' },
        { a: 'multi\nline', b: '' },
      ],
    });
    expect(parseCsv(toCsv(table.headers, table.rows))).toEqual(table);
    expect(parseCsv(PEOPLE).rows[0]).toEqual({ 'First name': 'Ada', city: 'London, UK' });
    expect(() => parseCsv('a,a\n1,2\n')).toThrow('csv: header "a" appears twice');
    expect(() => parseCsv('a\n"open\n')).toThrow(/never closes/);
  });

  it('takes at most 1,000 columns and finds a duplicate header among them', () => {
    const header = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`);
    expect(parseCsv(`${header(1000).join(',')}\n`).headers).toHaveLength(1000);
    expect(() => parseCsv(`${[...header(999), 'c5'].join(',')}\n`)).toThrow('csv: header "c5" appears twice');
    expect(() => parseCsv(`${header(200_000).join(',')}\n`, 'csv_path big.csv')).toThrow(
      'csv_path big.csv: the header has 200000 columns, more than 1000; keep the columns the prompt needs',
    );
  });
});
