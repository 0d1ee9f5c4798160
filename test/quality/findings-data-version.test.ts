/**
 * The stale sweep's check at every run's end (`sweepsNothing`) reads SQLite's `PRAGMA
 * data_version` through the connection's shared per-transaction read (src/store/data-version.ts,
 * p-sqlprof5): inside a write transaction, where no other connection can commit, the version
 * another store already read is the answer, no second statement; outside one each check reads it,
 * and another process's commit is still seen.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STALE_AFTER_MS } from '../../src/quality/findings';
import { dataVersion } from '../../src/store/data-version';
import { makeTestApp, type TestClock } from '../helpers/make-test-app';
import { countStatements } from '../helpers/sqlite-ledger';

afterEach(() => {
  vi.restoreAllMocks();
});

const versionReads = (texts: string[]) => texts.filter((t) => t === 'PRAGMA data_version').length;

describe('the stale sweep’s data_version check', () => {
  it('COMPAT-PERF-491: inside a transaction it takes the version already read; outside it reads, and sees another process’s commit', async () => {
    const app = await makeTestApp();
    const findings = app.quality.findings;
    const finding = await findings.observe(
      { kind: 'reported', fingerprint: 'reported:dv', title: 'old one' },
      { source: 'test' },
    );
    await findings.act(finding.id, 'resolve', 'done', { source: 'test' });
    (app.clock as TestClock).advance(STALE_AFTER_MS + 1);
    expect(await findings.sweep({ source: 'sweep' })).toEqual([]);
    const sweepsNothing = () => findings.sweepsNothing?.();
    const counted = countStatements(app.db);
    app.db.exec('BEGIN IMMEDIATE');
    // Another store's read of the version in this transaction (an adaptive or readout memo).
    const version = dataVersion(app.db);
    expect(sweepsNothing()).toBe(true);
    expect(sweepsNothing()).toBe(true);
    app.db.exec('COMMIT');
    expect(versionReads(counted.texts)).toBe(1);
    expect(sweepsNothing()).toBe(true);
    expect(versionReads(counted.texts)).toBe(2);
    const other = new Database(join(app.dataDir, 'svc.db'));
    try {
      other.prepare("UPDATE findings SET state = 'open' WHERE id = ?").run(finding.id);
    } finally {
      other.close();
    }
    expect(sweepsNothing()).toBe(false);
    expect(dataVersion(app.db)).toBeGreaterThan(version);
    vi.restoreAllMocks();
    expect((await findings.sweep({ source: 'sweep' })).map((f) => [f.id, f.state])).toEqual([
      [finding.id, 'stale'],
    ]);
  });
});
