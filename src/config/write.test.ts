import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { writeConfigKey } from './write';

describe('config set/unset', () => {
  it('edits one line in place and keeps comments', () => {
    const dir = tmpWorkspace({ files: { 'svc.toml': '# my config\n[options]\n# steps\nmax_steps = 10\n' } });
    const file = join(dir, 'svc.toml');
    writeConfigKey(file, 'options.max_steps', 20);
    expect(readFileSync(file, 'utf8')).toBe('# my config\n[options]\n# steps\nmax_steps = 20\n');
    writeConfigKey(file, 'options.auto_compact', false);
    expect(parse(readFileSync(file, 'utf8'))).toEqual({ options: { max_steps: 20, auto_compact: false } });
    expect(readFileSync(file, 'utf8')).toContain('# steps');
  });

  it('creates the table and the file when missing', () => {
    const dir = tmpWorkspace();
    const file = join(dir, 'svc.toml');
    writeConfigKey(file, 'models.large', 'acme/m1');
    writeConfigKey(file, 'providers.acme.base_url', 'http://127.0.0.1:1/v1');
    expect(parse(readFileSync(file, 'utf8'))).toEqual({
      models: { large: 'acme/m1' },
      providers: { acme: { base_url: 'http://127.0.0.1:1/v1' } },
    });
  });

  it('unsets a key', () => {
    const dir = tmpWorkspace({ files: { 'svc.toml': '[options]\nmax_steps = 10\nauto_compact = true\n' } });
    const file = join(dir, 'svc.toml');
    expect(writeConfigKey(file, 'options.max_steps', undefined).changed).toBe(true);
    expect(parse(readFileSync(file, 'utf8'))).toEqual({ options: { auto_compact: true } });
    expect(writeConfigKey(file, 'options.max_steps', undefined).changed).toBe(false);
  });

  it('refuses an invalid value and leaves the file untouched', () => {
    const dir = tmpWorkspace({ files: { 'svc.toml': '[options]\nmax_steps = 10\n' } });
    const file = join(dir, 'svc.toml');
    expect(() => writeConfigKey(file, 'options.max_steps', 'lots')).toThrowError(
      /refusing to write options\.max_steps.*unchanged/,
    );
    expect(() => writeConfigKey(file, 'options.nonsense', 1)).toThrowError(/unknown key nonsense/);
    expect(readFileSync(file, 'utf8')).toBe('[options]\nmax_steps = 10\n');
  });

  it('refuses to edit a file with a syntax error', () => {
    const dir = tmpWorkspace();
    const file = join(dir, 'svc.toml');
    writeFileSync(file, '[options\n');
    expect(() => writeConfigKey(file, 'options.max_steps', 3)).toThrowError(/syntax error/);
    expect(readFileSync(file, 'utf8')).toBe('[options\n');
  });
});
