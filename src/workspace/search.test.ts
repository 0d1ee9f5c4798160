/**
 * The search ops' ignore file and arguments (p-readsmore): the ignore file is named by its content
 * and written whole, so workspaces sharing a data dir never see each other's (a search may run
 * while its step's first statement is in flight: writing it must change nothing anyone could
 * observe); a path named like a flag is a path.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createPathResolver } from './paths';
import { createSearchOps } from './search';

/** Search ops over `root` with `hidden/` (inside it) protected, their data in `dataDir`. */
function opsFor(root: string, dataDir: string, hidden = 'secret') {
  const paths = createPathResolver({ root, allowOutside: () => false });
  return createSearchOps({ paths, dataDir, hidden: () => [join(root, hidden)] });
}

describe('search ignore file', () => {
  it('STORE-PG-464: workspaces sharing a data dir each keep their own ignore file, named by its content, written whole, once', async () => {
    const dataDir = join(tmpWorkspace(), 'shared-data');
    const a = tmpWorkspace({ files: { 'secret/a-key.txt': 'k', 'open/a.txt': 'k' } });
    const b = tmpWorkspace({ files: { 'private/b-key.txt': 'k', 'secret/b.txt': 'k' } });
    const opsA = opsFor(a, dataDir);
    const opsB = opsFor(b, dataDir, 'private');
    const ctx = { tool: 'grep' };
    expect((await opsA.grep({ pattern: 'k', output_mode: 'files' }, ctx)).files).toEqual(['open/a.txt']);
    expect((await opsB.grep({ pattern: 'k', output_mode: 'files' }, ctx)).files).toEqual(['secret/b.txt']);
    // A's searches after B's first one still hide A's protected directory.
    expect((await opsA.grep({ pattern: 'k', output_mode: 'files' }, ctx)).files).toEqual(['open/a.txt']);
    expect((await opsA.glob({ pattern: '*.txt' }, ctx)).files).toEqual(['open/a.txt']);
    const written = readdirSync(dataDir).sort();
    expect(written).toHaveLength(2);
    for (const name of written) expect(name).toMatch(/^search-[0-9a-f]{16}\.ignore$/);
    const texts = written.map((name) => readFileSync(join(dataDir, name), 'utf8')).sort();
    expect(texts).toEqual(['.git/\n/private\n', '.git/\n/secret\n']);
    // Another process's ops over A find A's file there and use it as it is.
    const again = opsFor(a, dataDir);
    expect((await again.ls({}, ctx)).files).toBe(1);
    expect(readdirSync(dataDir).sort()).toEqual(written);
  });

  it('STORE-PG-465: ls and glob of a directory named like a flag list it', async () => {
    const root = tmpWorkspace({ files: { '-pre=x/a.txt': 'k' } });
    mkdirSync(join(root, 'data'));
    const ops = opsFor(root, join(root, 'data'));
    const ctx = { tool: 'ls' };
    expect((await ops.ls({ path: '-pre=x' }, ctx)).tree).toBe('-pre=x/\n  a.txt');
    expect((await ops.glob({ pattern: '*.txt', path: '-pre=x' }, ctx)).files).toEqual(['-pre=x/a.txt']);
  });
});
