import { describe, expect, it } from 'vitest';
import { opensTui } from './opens-tui';

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
