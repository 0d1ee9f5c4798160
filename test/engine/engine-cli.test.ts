/**
 * `[engine] kind = "dbos"` through the built binary (issue 19): one stderr line naming the problem
 * and the next step, exit 2 (a config error), and no store opened: no svc.db in the data dir.
 * Needs `npm run build`.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });

describe('[engine] kind through the CLI', () => {
  it('ENGINE-11: dbos on the SQLite store stops svc with one line and exit 2, before svc.db exists', async () => {
    const ws = tmpWorkspace();
    writeFileSync(join(ws, 'svc.toml'), '[engine]\nkind = "dbos"\n');
    const result = await runBin(['session', 'list'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'svc: [engine] kind = "dbos" needs the PostgreSQL store, and [store] is the SQLite file: set [store] url to a postgres:// URL (or SVC_STORE_URL), or set [engine] kind = "in-process"\n',
    );
    expect(existsSync(join(ws, '.svc', 'svc.db'))).toBe(false);
  });

  it('ENGINE-12: dbos on PostgreSQL passes the engine check; an unreachable store is the error, exit 1', async () => {
    const ws = tmpWorkspace();
    writeFileSync(join(ws, 'svc.toml'), '[engine]\nkind = "dbos"\n');
    // Nothing listens on port 1: the store's connection error names host, port and database.
    const result = await runBin(['session', 'list'], {
      cwd: ws,
      env: { ...env(ws), SVC_STORE_URL: 'postgres://svc@127.0.0.1:1/svc' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('svc: cannot reach PostgreSQL at 127.0.0.1:1 (database "svc"');
    expect(result.stderr).not.toContain('[engine]');
  });
});
