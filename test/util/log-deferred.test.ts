/**
 * The service's log records off the request's critical path (src/log.ts `deferInfo`, p-sqlpath):
 * a debug or info record is written at the second check phase after it was logged (a compat request's
 * `run started` before its model request, `run finished` before its `[DONE]`), the records of a
 * turn in one write; a warning or an error writes what is held first, then itself, at once.
 */
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFileLogger, rotatedLogFiles } from '../../src/log';
import { createRedactor } from '../../src/redact';
import { makeTestApp } from '../helpers/make-test-app';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** The check phase the held records are written at: the one after their turn's next (p-promptheld). */
const checkPhase = async () => {
  await turn();
  await turn();
};
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
    : [];

afterEach(() => {
  vi.useRealTimers();
});

describe('deferred log records', () => {
  it('COMPAT-PERF-90: info records are written at the check phase, in order, redacted, with the time they were logged', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-12-03T13:00:00.000Z'));
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'logs', 'svc.log');
    const log = createFileLogger(file, { redactor: createRedactor(['hunter2-secret']), deferInfo: true });
    const child = log.child({ component: 'agent' });
    log.info('run started', { run_id: 'run_1', note: 'key hunter2-secret' });
    vi.setSystemTime(new Date('2026-12-03T13:00:00.250Z'));
    child.info('run finished', { run_id: 'run_1', time: 'the caller’s own' });
    log.debug('below the level');
    // Nothing written in the logging code's stretch, nor after its microtasks.
    await Promise.resolve();
    expect(existsSync(file)).toBe(false);
    vi.setSystemTime(new Date('2026-12-03T13:00:09.000Z'));
    await checkPhase();
    expect(lines(file)).toEqual([
      {
        level: 'info',
        message: 'run started',
        time: '2026-12-03T13:00:00.000Z',
        run_id: 'run_1',
        note: 'key [REDACTED]',
      },
      {
        level: 'info',
        message: 'run finished',
        time: 'the caller’s own',
        component: 'agent',
        run_id: 'run_1',
      },
    ]);
    // A later turn's records follow.
    log.info('third');
    await checkPhase();
    expect(lines(file).map((r) => r.message)).toEqual(['run started', 'run finished', 'third']);
  });

  it('COMPAT-PERF-406: a check-phase callback queued in the records’ turn after them runs before their write (a compat request’s head before its `run started`)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'logs', 'svc.log');
    const log = createFileLogger(file, { deferInfo: true });
    const seen: string[] = [];
    log.info('run started', { run_id: 'run_1' });
    setImmediate(() => seen.push(`head: log written ${lines(file).length}`));
    await turn();
    // On bc6cb94 the record is written at that check phase, before the callback queued after it.
    expect(seen).toEqual(['head: log written 0']);
    await turn();
    expect(lines(file).map((l) => l.message)).toEqual(['run started']);
  });

  it('COMPAT-PERF-91: a warning or an error writes the held records first, then itself, at once', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'svc.log');
    const log = createFileLogger(file, { deferInfo: true });
    log.info('first');
    log.child({ run_id: 'run_2' }).warn('second', { error: new Error('boom') });
    const written = lines(file);
    expect(written.map((r) => [r.level, r.message])).toEqual([
      ['info', 'first'],
      ['warn', 'second'],
    ]);
    expect(written[1]).toMatchObject({ run_id: 'run_2', error: { name: 'Error', message: 'boom' } });
    log.info('third');
    log.error('fourth');
    expect(lines(file).map((r) => r.message)).toEqual(['first', 'second', 'third', 'fourth']);
    // Nothing left held: the check phase writes no record twice.
    await checkPhase();
    expect(lines(file)).toHaveLength(4);
  });

  it('COMPAT-PERF-92: a turn of held records past the file’s bound rotates as records one by one did', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'svc.log');
    const log = createFileLogger(file, { maxBytes: 1_000, keep: 2, deferInfo: true });
    for (let i = 0; i < 100; i++) log.info('a line of the log', { i, pad: 'x'.repeat(40) });
    expect(existsSync(file)).toBe(false);
    await checkPhase();
    expect(rotatedLogFiles(file)).toEqual([`${file}.1`, `${file}.2`]);
    for (const f of [file, `${file}.1`, `${file}.2`]) expect(statSync(f).size).toBeLessThanOrEqual(1_000);
    const last = lines(file).at(-1);
    expect(last?.i).toBe(99);
    // Small turns go in one write each, bounded too.
    for (let turn = 0; turn < 30; turn++) {
      for (let i = 0; i < 3; i++) log.info('a line of the log', { turn, i, pad: 'x'.repeat(40) });
      await checkPhase();
    }
    for (const f of [file, `${file}.1`, `${file}.2`]) expect(statSync(f).size).toBeLessThanOrEqual(1_000);
    expect(lines(file).at(-1)).toMatchObject({ turn: 29, i: 2 });
  });

  it('COMPAT-PERF-93: the service’s own log (no logger given) holds info records for the check phase', async () => {
    const app = await makeTestApp({ log: undefined });
    const file = join(app.dataDir, 'logs', 'svc.log');
    const before = lines(file).length;
    app.log.info('p-sqlpath probe', { n: 1 });
    expect(lines(file)).toHaveLength(before);
    await checkPhase();
    expect(lines(file).slice(before)).toEqual([
      expect.objectContaining({ level: 'info', message: 'p-sqlpath probe', n: 1 }),
    ]);
  });
});
