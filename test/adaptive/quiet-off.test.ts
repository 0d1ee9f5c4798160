/**
 * The adaptive layer off on SQLite (the default; issue 17 item 3, p-leanrun): the monitor's idle
 * handler at a run's end reads no session row when the store knows the session has no proposal to
 * clear (the sessions with one, kept while no other connection committed and this process wrote
 * no row), and a run's start skips its `settled()` wait when there is nothing to wait for
 * (`quiet()`). A proposal left by a run with the layer on, here or in another process, is still
 * cleared at the next boundary.
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { emptyRow, type StoredProposal } from '../../src/adaptive/store';
import { openDb } from '../../src/store/db';
import { reply } from '../helpers/fake-provider';
import { adaptiveApp } from './helpers';

const CLEARED = 'options.adaptive_orchestration.enabled is false';

describe('adaptive layer off: nothing to clear, nothing queued', () => {
  it('COMPAT-PERF-111: an idle state without a proposal reads no row; a proposal written here or by another connection is still cleared', async () => {
    const { app } = await adaptiveApp(
      [reply().text('one'), reply().text('two'), reply().text('three'), reply().text('four')],
      { enabled: false },
    );
    const adaptive = app.adaptive!;
    const get = vi.spyOn(adaptive.store, 'get');
    const first = await app.agent.run({ prompt: 'Say one' });
    await adaptive.settled();
    const second = await app.agent.run({ prompt: 'Say two', sessionId: first.session_id });
    await adaptive.settled();
    // b2229f4: one read of the session's row at each run's idle state.
    expect(get).not.toHaveBeenCalled();
    expect(second.status).toBe('completed');
    expect(adaptive.quiet(first.session_id)).toBe(true);
    // Another session's idle state queued: this session's run start still has nothing to wait for.
    app.bus.publish('ses_other', 'state.changed', { session_id: 'ses_other', state: 'idle', run_id: null });
    expect(adaptive.quiet('ses_other')).toBe(false);
    expect(adaptive.quiet(first.session_id)).toBe(true);
    await adaptive.settled();
    expect(adaptive.quiet('ses_other')).toBe(true);

    // A proposal left in the row (a run with the layer on): cleared at the next idle state.
    const proposal = {
      base_revision: 0,
      reason: 'scripted',
      rule: 'provider_failures',
    } as unknown as StoredProposal;
    const s = first.session_id;
    await adaptive.store.put({ ...emptyRow(s, app.clock.now()), proposal, apply_status: 'pending' });
    expect(adaptive.quiet(s)).toBe(true);
    await app.agent.run({ prompt: 'Say three', sessionId: s });
    await adaptive.settled();
    expect(await adaptive.store.get(s)).toMatchObject({ proposal: null, cleared_reason: CLEARED });

    // Written by another connection (another process): seen through data_version, cleared too.
    const other = openDb({ dataDir: join(app.db.name, '..') });
    try {
      other
        .prepare("UPDATE adaptive_sessions SET proposal = ?, cleared_reason = '' WHERE session_id = ?")
        .run(JSON.stringify(proposal), s);
    } finally {
      other.close();
    }
    await app.agent.run({ prompt: 'Say four', sessionId: s });
    await adaptive.settled();
    expect(await adaptive.store.get(s)).toMatchObject({ proposal: null, cleared_reason: CLEARED });
  });
});
