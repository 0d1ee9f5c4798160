/**
 * A run as the ledger answers it (issue 17 item 3): the run row's columns in the table's order,
 * `options` and `failure` parsed, the four token columns folded into `usage` (the last key) and
 * `cancel_requested` a boolean. `toRun` fills a copy of the layout's template (not a rest
 * destructuring, not key by key into `{}`); its answer must not change, and the run keeps fast
 * properties (ENGINE-CPU-80).
 */
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { toRun } from '../../src/runs/queries';
import type { Db } from '../../src/store/db';
import { getWideRow } from '../../src/store/wide-row';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const TOKENS = ['input_tokens', 'output_tokens', 'reasoning_tokens', 'cached_input_tokens'];

describe('run rows', () => {
  it('STORE-4 a run keeps the row order, parses options and failure, folds the tokens into usage', async () => {
    const { db, ledger } = openTestLedger(opened);
    const created = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const failure = { code: 'provider_error', summary: 's', next: 'n' };
    const usage = { input_tokens: 10, output_tokens: 2, reasoning_tokens: 1, cached_input_tokens: 4 };
    const updated = await ledger.update(created.id, {
      status: 'failed',
      failure: failure as never,
      usage,
      steps: 2,
    });
    const row = db.prepare('SELECT * FROM agent_runs WHERE id = ?').get(created.id) as Record<
      string,
      unknown
    >;
    const columns = Object.keys(row);
    const expectedKeys = [...columns.filter((c) => !TOKENS.includes(c)), 'usage'];
    for (const run of [created, updated, await ledger.get(created.id)]) {
      expect(Object.keys(run!)).toEqual(expectedKeys);
      expect(run!.cancel_requested).toBe(false);
    }
    expect(updated).toEqual(await ledger.get(created.id));
    expect(updated).toMatchObject({ status: 'failed', steps: 2, usage, failure, options: { max_steps: 3 } });
    expect(created).toMatchObject({ failure: null, options: { max_steps: 3 } });
    expect(created.usage).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      reasoning_tokens: 0,
      cached_input_tokens: 0,
    });
  });

  it('STORE-4 malformed option text reads as an empty object, cancel_requested 1 as true', () => {
    const run = toRun({
      id: 'run_1',
      options: 'not json',
      failure: null,
      input_tokens: 1,
      output_tokens: 2,
      reasoning_tokens: 3,
      cached_input_tokens: 4,
      cancel_requested: 1,
      status: 'queued',
    } as never);
    expect(run).toEqual({
      id: 'run_1',
      options: {},
      failure: null,
      usage: { input_tokens: 1, output_tokens: 2, reasoning_tokens: 3, cached_input_tokens: 4 },
      cancel_requested: true,
      status: 'queued',
    });
    expect(Object.keys(run)).toEqual(['id', 'options', 'failure', 'cancel_requested', 'status', 'usage']);
  });

  it('STORE-5 creating and claiming a run answer the row from the write, as a read gives it', async () => {
    const { db, ledger } = openTestLedger(opened);
    const input = RUN_INPUT;
    await ledger.create({ ...input, status: 'running' }); // statements prepared, first-use work done
    const reads = readsOfRuns(db);
    const queued = await ledger.create(input);
    const running = await ledger.create({ ...input, session_id: 'ses_1', status: 'running' });
    expect(reads.count).toBe(0);
    vi.restoreAllMocks();
    expect(queued).toEqual(await ledger.get(queued.id));
    expect(running).toEqual(await ledger.get(running.id));
    expect(queued).toMatchObject({
      status: 'queued',
      started_at: null,
      pid: null,
      steps: 0,
      cancel_requested: false,
    });

    db.prepare("UPDATE agent_runs SET status = 'completed' WHERE status = 'running'").run();
    const reads2 = readsOfRuns(db);
    const claimed = await ledger.claim(queued.id);
    expect(reads2.count).toBe(0); // the checks are in the write (STORE-82); no read after it
    vi.restoreAllMocks();
    expect(claimed.ok).toBe(true);
    if (!claimed.ok) return;
    expect(claimed.run).toEqual(await ledger.get(queued.id));
    expect(claimed.run).toMatchObject({ status: 'running', pid: process.pid, runner: 'rnr_test' });
  });
});

describe('run rows: allocation (ENGINE-CPU-80)', () => {
  it('ENGINE-CPU-80 a run has fast properties, whatever layout its row has', async () => {
    const { ledger } = openTestLedger(opened);
    const created = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const runs = [created, await ledger.get(created.id)];
    // Rows of another layout (other columns, another order) between and after: each run keeps
    // its own row's column order, and a layout seen before is recognised again.
    const other = {
      options: '{}',
      failure: null,
      id: 'run_2',
      ...TOKEN_ROW,
      cancel_requested: 0,
      extra: 'x',
    };
    const reordered = toRun(other as never);
    expect(Object.keys(reordered)).toEqual([
      'options',
      'failure',
      'id',
      'cancel_requested',
      'extra',
      'usage',
    ]);
    expect(reordered).toMatchObject({ id: 'run_2', extra: 'x', options: {}, cancel_requested: false });
    runs.push(reordered, await ledger.get(created.id));
    expect(Object.keys(runs[3]!)).toEqual(Object.keys(created));
    expect(runs[3]).toEqual(created);
    for (const run of runs) expect(hasFastProperties(run)).toBe(true);
  });
});

describe('wide rows (ENGINE-CPU-82)', () => {
  it('ENGINE-CPU-82 run rows come through their values: same row, fast properties, the statement left as it was', async () => {
    const { db, ledger } = openTestLedger(opened);
    const queued = await ledger.create(RUN_INPUT);
    // Every read of a whole run row (claim, update, get) answers values, not a row object that
    // better-sqlite3 builds column by column (a dictionary past 16 columns; agent_runs has 28).
    const answers = runRowAnswers(db);
    const claimed = await ledger.claim(queued.id);
    const afterClaim = await ledger.get(queued.id);
    const updated = await ledger.update(queued.id, { steps: 1 });
    const got = await ledger.get(queued.id);
    vi.restoreAllMocks();
    // Claim, get, get: the update of a run whose row this process holds returns only the columns
    // another writer may change, through its values too (p-sqlrow, COMPAT-PERF-482).
    expect(answers).toHaveLength(3);
    expect(answers.every((answer) => Array.isArray(answer))).toBe(true);
    expect(claimed.ok && claimed.run).toEqual(afterClaim);
    expect(updated).toEqual(got);
    expect(got).toMatchObject({ status: 'running', steps: 1 });
    for (const run of [claimed.ok ? claimed.run : undefined, afterClaim, updated, got])
      expect(hasFastProperties(run)).toBe(true);

    const text = 'SELECT * FROM agent_runs WHERE id = ?';
    const read = getWideRow<Record<string, unknown>>(db.prepare(text), [queued.id]);
    // The cached statement answers an object again (not the array its read went through).
    const plain = db.prepare(text).get(queued.id) as Record<string, unknown>;
    expect(Array.isArray(plain)).toBe(false);
    expect(read).toEqual(plain);
    expect(Object.keys(read!)).toEqual(Object.keys(plain));
    expect(hasFastProperties(read)).toBe(true);
    expect(getWideRow(db.prepare(text), ['run_none'])).toBeUndefined();
  });
});

/** What the handle's statements answer from now on to a `… agent_runs … RETURNING *` or `SELECT *`. */
function runRowAnswers(db: Db): unknown[] {
  const answers: unknown[] = [];
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as { get: (...params: unknown[]) => unknown };
  const get = proto.get;
  vi.spyOn(proto, 'get').mockImplementation(function (this: { source: string }, ...params: unknown[]) {
    const answer = get.apply(this, params);
    if (/agent_runs\b[\s\S]*RETURNING \*|SELECT \* FROM agent_runs/.test(this.source)) answers.push(answer);
    return answer;
  });
  return answers;
}

const TOKEN_ROW = { input_tokens: 1, output_tokens: 2, reasoning_tokens: 3, cached_input_tokens: 4 };

/**
 * V8's own answer: an object built by adding its ~28 keys one by one to `{}` is a dictionary
 * (≈ 3 KB of hash table, slower reads); one from the layout's template is not.
 */
function hasFastProperties(value: unknown): boolean {
  setFlagsFromString('--allow-natives-syntax');
  // The V8 intrinsic only parses in code compiled after the flag.
  return new Function('value', 'return %HasFastProperties(value)')(value) as boolean;
}

/** Counts `SELECT * FROM agent_runs WHERE id = ?` run on the handle from now on. */
function readsOfRuns(db: Db): { readonly count: number } {
  const { texts } = countStatements(db);
  return {
    get count() {
      return texts.filter((text) => text === 'SELECT * FROM agent_runs WHERE id = ?').length;
    },
  };
}
