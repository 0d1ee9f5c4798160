/**
 * The template database (issue 17): a new data dir starts from a copy of a pre-migrated template
 * in the cache dir, written the first time; an existing database is never replaced; a damaged
 * template is dropped, never used; a different migration set has its own template.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DB_FILE, openDb } from './db';
import { migrations } from './migrations/index';
import { templatePath } from './template';

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-template-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const appliedAt = (dataDir: string) => {
  const db = openDb({ dataDir });
  try {
    return db.prepare('SELECT id, applied_at FROM schema_migrations ORDER BY id').all() as {
      id: number;
      applied_at: number;
    }[];
  } finally {
    db.close();
  }
};

describe('template database', () => {
  it('the first new data dir writes the template (WAL, fully migrated); the next one is a copy of it', async () => {
    const root = scratch();
    const cache = join(root, 'cache');
    openDb({ dataDir: join(root, 'a'), templateDir: cache }).close();
    const template = templatePath(cache, migrations);
    expect(readdirSync(cache)).toEqual([template.split('/').pop()]);

    await new Promise((r) => setTimeout(r, 5));
    const b = openDb({ dataDir: join(root, 'b'), templateDir: cache });
    expect(b.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = (name: string) =>
      (
        openDb({ dataDir: join(root, name) })
          .prepare("SELECT name FROM sqlite_master WHERE type IN ('table','index','trigger') ORDER BY name")
          .all() as { name: string }[]
      ).map((r) => r.name);
    b.close();
    // Same schema as the data dir that was migrated statement by statement.
    expect(tables('b')).toEqual(tables('a'));
    expect(appliedAt(join(root, 'b')).map((r) => r.id)).toEqual(
      [...migrations].map((m) => m.id).sort((x, y) => x - y),
    );
    // b's migration rows are the template's (written with a), not applied again at b's open.
    expect(appliedAt(join(root, 'b'))).toEqual(appliedAt(join(root, 'a')));
    // And the copy is a database of its own: writing to b leaves the template as it was.
    const db = openDb({ dataDir: join(root, 'b'), templateDir: cache });
    db.prepare("INSERT INTO schema_migrations (id, name, applied_at) VALUES (999999, 'x', 1)").run();
    db.close();
    openDb({ dataDir: join(root, 'c'), templateDir: cache }).close();
    expect(appliedAt(join(root, 'c')).some((r) => r.id === 999999)).toBe(false);
  });

  it('an existing database is never replaced by the template', () => {
    const root = scratch();
    const cache = join(root, 'cache');
    openDb({ dataDir: join(root, 'a'), templateDir: cache }).close();
    const keep = openDb({ dataDir: join(root, 'keep') });
    keep.prepare("INSERT INTO schema_migrations (id, name, applied_at) VALUES (424242, 'mine', 7)").run();
    keep.close();
    openDb({ dataDir: join(root, 'keep'), templateDir: cache }).close();
    expect(appliedAt(join(root, 'keep')).find((r) => r.id === 424242)).toEqual({ id: 424242, applied_at: 7 });
  });

  it('a damaged template is dropped and the data dir is created as usual', () => {
    const root = scratch();
    const cache = join(root, 'cache');
    mkdirSync(cache);
    const template = templatePath(cache, migrations);
    writeFileSync(template, 'not a database at all');
    const db = openDb({ dataDir: join(root, 'a'), templateDir: cache });
    expect(db.prepare('SELECT count(*) AS n FROM schema_migrations').get()).toEqual({ n: migrations.length });
    db.close();
    // Rewritten from the good database.
    expect(existsSync(template)).toBe(true);
    openDb({ dataDir: join(root, 'b'), templateDir: cache }).close();
    expect(existsSync(join(root, 'b', DB_FILE))).toBe(true);
  });

  it('another migration set has its own template; a migration prefix uses none', () => {
    const root = scratch();
    const cache = join(root, 'cache');
    expect(templatePath(cache, migrations.slice(0, 3))).not.toBe(templatePath(cache, migrations));
    openDb({ dataDir: join(root, 'old'), templateDir: cache, migrations: migrations.slice(0, 3) }).close();
    expect(existsSync(cache)).toBe(false);
  });
});
