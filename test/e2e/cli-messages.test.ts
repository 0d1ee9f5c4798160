/**
 * Issue 16 item 10, through the built binary: one `svc: ` prefix, never two; an unknown command
 * (with or without --help) is an error naming it and the nearest known one, exit 2.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });

describe('CLI messages', () => {
  it('svc run with no prompt says so once: no doubled prefix', async () => {
    const ws = tmpWorkspace();
    const result = await runBin(['run'], { cwd: ws, env: env(ws), input: '' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('svc: no prompt; pass it as an argument (svc run "<prompt>") or on stdin\n');
  });

  it('an unknown command, with or without --help, names it and the nearest one, exit 2', async () => {
    const ws = tmpWorkspace();
    for (const [args, line] of [
      [
        ['sesion', '--help'],
        "svc: unknown command 'sesion'; did you mean 'session'? (svc --help lists the commands)",
      ],
      [
        ['sesion', 'list'],
        "svc: unknown command 'sesion'; did you mean 'session'? (svc --help lists the commands)",
      ],
      [
        ['session', 'lst', '--help'],
        "svc: unknown command 'session lst'; did you mean 'session list'? (svc session --help lists the commands)",
      ],
      [['xyzzyq', '-h'], "svc: unknown command 'xyzzyq' (svc --help lists the commands)"],
      // CLI-FIRST-4: two edits of five letters is another word, not a typo (it suggested 'logs');
      // two neighbours swapped is one.
      [['bogus'], "svc: unknown command 'bogus' (svc --help lists the commands)"],
      [['rnu', 'hi'], "svc: unknown command 'rnu'; did you mean 'run'? (svc --help lists the commands)"],
    ] as const) {
      const result = await runBin([...args], { cwd: ws, env: env(ws) });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`${line}\n`);
    }
    // CLI-FIRST-5: a subcommand's usage error points at its own help (it pointed at svc --help).
    for (const [args, hint] of [
      [['run', '--bogus', 'hi'], '(run svc run --help for usage)'],
      [['session', 'list', '--bogus'], '(run svc session list --help for usage)'],
    ] as const) {
      const result = await runBin([...args], { cwd: ws, env: env(ws) });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toBe(`svc: unknown option '--bogus'\n${hint}\n`);
    }
    const help = await runBin(['session', '--help'], { cwd: ws, env: env(ws) });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: svc session');
  });

  it('CLI-FIRST-6: a command with --json takes --format json as the same (it was an unknown option)', async () => {
    const ws = tmpWorkspace();
    const json = await runBin(['trust', '--list', '--json'], { cwd: ws, env: env(ws) });
    const format = await runBin(['trust', '--list', '--format', 'json'], { cwd: ws, env: env(ws) });
    expect([json.code, format.code]).toEqual([0, 0]);
    expect(JSON.parse(format.stdout)).toEqual(JSON.parse(json.stdout));
    const doctor = await runBin(['doctor', '--format', 'json'], { cwd: ws, env: env(ws) });
    expect(JSON.parse(doctor.stdout)).toMatchObject({
      ok: expect.any(Boolean),
      data_dir: expect.any(String),
    });
    const bad = await runBin(['doctor', '--format', 'yaml'], { cwd: ws, env: env(ws) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("argument 'yaml' is invalid. Allowed choices are text, json.");
  });
});
