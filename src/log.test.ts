import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileLogger, rotatedLogFiles } from './log';
import { createRedactor } from './redact';

describe('createFileLogger', () => {
  it('creates the file on the first record, at info by default, redacted', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'logs', 'svc.log');
    const redactor = createRedactor(['hunter2-secret']);
    const log = createFileLogger(file, { redactor });
    log.debug('not written');
    expect(existsSync(file)).toBe(false);
    log.info('run started', { run_id: 'run_1', note: 'key hunter2-secret' });
    const [line] = readFileSync(file, 'utf8').trim().split('\n');
    expect(JSON.parse(line)).toMatchObject({
      level: 'info',
      message: 'run started',
      run_id: 'run_1',
      note: 'key [REDACTED]',
    });
  });

  it('keeps a logged error\'s name, message, code, cause and stack, redacted (not "error":{})', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'svc.log');
    const log = createFileLogger(file, { redactor: createRedactor(['hunter2-secret']) });
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    log.error('http request failed', { error: new RangeError('bad key hunter2-secret', { cause }) });
    log.info('held, then written', { error: new Error('at info') });
    const [first, second] = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(first.error).toMatchObject({
      name: 'RangeError',
      message: 'bad key [REDACTED]',
      stack: expect.stringMatching(/^RangeError: bad key \[REDACTED\]\n\s+at /),
      cause: { name: 'Error', message: 'connect ECONNREFUSED', code: 'ECONNREFUSED' },
    });
    expect(JSON.stringify(first)).not.toContain('hunter2');
    expect(second.error).toMatchObject({ name: 'Error', message: 'at info' });
  });

  it('rotates past maxBytes and keeps `keep` older files, so the logs stay bounded', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-log-')), 'svc.log');
    const log = createFileLogger(file, { maxBytes: 1_000, keep: 2 });
    for (let i = 0; i < 100; i++) log.info('a line of the log', { i, pad: 'x'.repeat(40) });
    expect(rotatedLogFiles(file)).toEqual([`${file}.1`, `${file}.2`]);
    expect(existsSync(`${file}.3`)).toBe(false);
    for (const f of [file, `${file}.1`, `${file}.2`]) expect(statSync(f).size).toBeLessThanOrEqual(1_000);
    // The newest record is in the live file, the ones before it in .1.
    const last = readFileSync(file, 'utf8').trim().split('\n').at(-1)!;
    expect(JSON.parse(last).i).toBe(99);
    const previous = readFileSync(`${file}.1`, 'utf8').trim().split('\n').at(-1)!;
    expect(JSON.parse(previous).i).toBe(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]).i - 1);
  });
});
