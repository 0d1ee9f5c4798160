/**
 * A run's end on SQLite with nothing for the quality listeners to do (every compat request's end;
 * issue 17 item 3, p-leanrun): the finding sweep is not queued when a pass would be skipped (no
 * other connection committed, no finding written here, none old enough as of the last pass), and
 * no capsule finalization is queued with capsules off and none recording. Each store answers at
 * once. What another connection commits, what this process writes and the clock passing a
 * finding's last sighting still reach the next run's end.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { STALE_AFTER_MS } from '../../src/quality/findings';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import type { TestClock } from '../helpers/make-test-app';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('quality listeners at a run end with nothing to do', () => {
  it('COMPAT-PERF-112: no sweep and no capsule finalization queued while nothing changed; changes still swept', async () => {
    const texts = ['w', 'a', 'b', 'c', 'd', 'e', 'f'];
    const { app } = await agentApp(texts.map((t) => reply().text(t)));
    const findings = app.quality.findings;
    const capsules = app.quality.capsules;
    const end = async (prompt: string) => {
      await app.agent.run({ prompt });
      await findings.flush();
      // The run's last writes commit at the next check phase (a step batch).
      await new Promise((resolve) => setImmediate(resolve));
    };
    await end('warm up'); // the first pass sweeps (nothing known yet)
    const sweep = vi.spyOn(findings, 'sweep');
    const finalize = vi.spyOn(capsules, 'finalize');
    await end('one');
    await end('two');
    // b2229f4: one sweep queued (and skipped inside) and one finalization at each run's end.
    expect(sweep).not.toHaveBeenCalled();
    expect(finalize).not.toHaveBeenCalled();

    // Written here: the next run's end sweeps.
    const open = await findings.observe(
      { kind: 'reported', fingerprint: 'reported:quiet', title: 'seen once' },
      { source: 'test' },
    );
    await end('three');
    expect(sweep).toHaveBeenCalledTimes(1);
    await end('four');
    expect(sweep).toHaveBeenCalledTimes(1);
    // The clock passes its last sighting: swept at the next end, stale.
    (app.clock as TestClock).advance(STALE_AFTER_MS + 1);
    await end('five');
    expect(sweep).toHaveBeenCalledTimes(2);
    expect((await findings.get(open.id)).state).toBe('stale');

    // Another connection reopens it: seen through data_version, swept again.
    const other = new Database(join(app.dataDir, 'svc.db'));
    try {
      other.prepare("UPDATE findings SET state = 'open' WHERE id = ?").run(open.id);
    } finally {
      other.close();
    }
    await end('six');
    expect(sweep).toHaveBeenCalledTimes(3);
    expect((await findings.get(open.id)).state).toBe('stale');
    expect(finalize).not.toHaveBeenCalled();
  });
});
