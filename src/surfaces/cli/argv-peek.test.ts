import { describe, expect, it } from 'vitest';
import { opensTui, startsService } from './argv-peek';
import { parsedCommandWord } from './index';

describe('opensTui', () => {
  it('is true for svc alone, svc tui and svc attach, after the root options', () => {
    for (const argv of [
      [],
      ['tui'],
      ['tui', '--continue'],
      ['attach', 'http://127.0.0.1:1'],
      ['--cwd', '/tmp/x'],
      ['--cwd=/tmp/x', '--data-dir', 'd', '-c', 'options.max_steps=2', 'tui', '-s', 'abc'],
      ['--config', 'extra.toml'],
    ]) {
      expect(opensTui(argv), argv.join(' ')).toBe(true);
    }
  });

  it('is false for every other command, help and version', () => {
    for (const argv of [
      ['run', 'hello'],
      ['--cwd', '/tmp/x', 'run', 'hello'],
      ['service', 'start', 'http'],
      ['--help'],
      ['-h'],
      ['--version'],
      ['--', 'tui'],
      ['--cwd', 'tui', 'run'],
    ]) {
      expect(opensTui(argv), argv.join(' ')).toBe(false);
    }
  });
});

describe('startsService', () => {
  it('is true for svc service start http, autopilot and mcp, after the root options', () => {
    for (const argv of [
      ['service', 'start', 'http'],
      ['service', 'start', 'http', '--port', '0'],
      ['--cwd', '/tmp/x', '-c', 'a=1', 'service', 'start', 'autopilot'],
      ['--data-dir=/tmp/d', 'service', 'start', 'mcp', '--transport', 'http'],
    ]) {
      expect(startsService(argv), argv.join(' ')).toBe(true);
    }
  });

  it('is false for every other command, help and an argv after --', () => {
    for (const argv of [
      [],
      ['run', 'service start http'],
      ['service', 'status'],
      ['service', 'start'],
      ['service', 'start', '--help'],
      ['--help', 'service', 'start', 'http'],
      ['--', 'service', 'start', 'http'],
      ['--cwd', 'service', 'start', 'http'],
    ]) {
      expect(startsService(argv), argv.join(' ')).toBe(false);
    }
  });
});

describe('parsedCommandWord', () => {
  it('is the first command word after the root options', () => {
    expect(parsedCommandWord(['run', 'hello', '--yolo'])).toBe('run');
    expect(parsedCommandWord(['--cwd', '/tmp/x', '-c', 'a=1', 'session', 'list'])).toBe('session');
    expect(parsedCommandWord(['--cwd=/tmp/x', 'run', 'x'])).toBe('run');
  });

  it('is undefined when help or the whole command list may be shown', () => {
    for (const argv of [[], ['help', 'run'], ['--help'], ['-h', 'run'], ['--', 'run'], ['--cwd', 'x']]) {
      expect(parsedCommandWord(argv), argv.join(' ')).toBeUndefined();
    }
  });
});
