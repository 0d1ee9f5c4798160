/**
 * The stale sweep runs at every run's end (a compat request is a run). On SQLite it skips the pass
 * when nothing can have changed since the last one; what another process commits and what this
 * process writes are still swept at the next run's end.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { STALE_AFTER_MS } from '../../src/quality/findings';
import { makeTestApp, type TestClock } from '../helpers/make-test-app';

async function appWithFixedFinding() {
  const app = await makeTestApp();
  const findings = app.quality.findings;
  const finding = await findings.observe(
    { kind: 'reported', fingerprint: 'reported:side', title: 'old one' },
    { source: 'test' },
  );
  await findings.act(finding.id, 'resolve', 'done', { source: 'test' });
  (app.clock as TestClock).advance(STALE_AFTER_MS + 1);
  // Nothing active: a quiet pass, then the same answer without one.
  expect(await findings.sweep({ source: 'sweep' })).toEqual([]);
  expect(await findings.sweep({ source: 'sweep' })).toEqual([]);
  return { app, findings, id: finding.id };
}

describe('stale sweep skip', () => {
  it('ENGINE-SIDE-8: a finding another process reopens (old last sighting) is swept at the next pass', async () => {
    const { app, findings, id } = await appWithFixedFinding();
    const other = new Database(join(app.dataDir, 'svc.db'));
    try {
      other.prepare("UPDATE findings SET state = 'open' WHERE id = ?").run(id);
    } finally {
      other.close();
    }
    expect((await findings.sweep({ source: 'sweep' })).map((f) => [f.id, f.state])).toEqual([[id, 'stale']]);
  });

  it('ENGINE-SIDE-9: a finding this process reopens is swept at the next pass', async () => {
    const { findings, id } = await appWithFixedFinding();
    await findings.act(id, 'reopen', 'again', { source: 'test' });
    expect((await findings.sweep({ source: 'sweep' })).map((f) => [f.id, f.state])).toEqual([[id, 'stale']]);
  });

  it('ENGINE-SIDE-10: an open finding turns stale when the clock passes its last sighting', async () => {
    const app = await makeTestApp();
    const findings = app.quality.findings;
    const open = await findings.observe(
      { kind: 'reported', fingerprint: 'reported:side10', title: 'seen once' },
      { source: 'test' },
    );
    expect(await findings.sweep({ source: 'sweep' })).toEqual([]);
    (app.clock as TestClock).advance(STALE_AFTER_MS + 1);
    expect((await findings.sweep({ source: 'sweep' })).map((f) => f.id)).toEqual([open.id]);
  });
});
