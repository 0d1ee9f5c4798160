/**
 * Run leases (issue 18, one writer per workspace): a run's first change takes its workspace's
 * lease and holds it until the run ends; another node's run changing the same workspace waits,
 * then goes on; a sub-agent changes under its root run's lease; a run that only reads, or a call
 * outside a run, takes nothing; a waiting run's cancel ends its wait.
 */
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createMemoryLogger } from '../log';
import { openDb } from '../store/db';
import { systemClock } from '../util/ids';
import { createLeaseRepository } from '../workspace/lease-repository';
import { createWorkspaceLeases } from '../workspace/leases';
import { createRunLeases } from './run-leases';

function twoNodes() {
  const dataDir = tmpWorkspace();
  const dbs = [openDb({ dataDir }), openDb({ dataDir })];
  const [a, b] = dbs.map((db, i) => {
    const repo = createLeaseRepository(() => db);
    const leases = createWorkspaceLeases({ repo, clock: systemClock, node: `node-${i}`, pollMs: 20 });
    return { repo, runLeases: createRunLeases({ leases, log: createMemoryLogger() }) };
  });
  return {
    a: a!,
    b: b!,
    close: () => {
      for (const db of dbs) db.close();
    },
  };
}

const run = (id: string, session: string, family = session, parent: string | null = null) => ({
  id,
  session_id: session,
  family_session_id: family,
  parent_run_id: parent,
});
const edit = (sessionId: string) => ({ tool: 'edit', sessionId, paths: ['a.txt'] });

describe('run leases', () => {
  it('STORE-PG-lease-5: a second node waits for the first run to end, then takes the workspace', async () => {
    const { a, b, close } = twoNodes();
    try {
      const signal = new AbortController().signal;
      a.runLeases.begin(run('run_1', 'ses_1'), '/srv/ws', signal);
      b.runLeases.begin(run('run_2', 'ses_2'), '/srv/ws', signal);
      // Nothing is taken until a change.
      expect(await a.repo.get('/srv/ws')).toBeUndefined();
      await a.runLeases.guard(edit('ses_1'));
      expect(await a.repo.get('/srv/ws')).toMatchObject({
        holder: 'run:run_1',
        runId: 'run_1',
        node: 'node-0',
      });
      // A second change of the same run does not wait on itself.
      await a.runLeases.guard(edit('ses_1'));

      let bDone = false;
      const waiting = b.runLeases.guard(edit('ses_2')).then(() => {
        bDone = true;
      });
      await new Promise((r) => setTimeout(r, 150));
      expect(bDone).toBe(false);
      await a.runLeases.end(run('run_1', 'ses_1'));
      await waiting;
      expect(await b.repo.get('/srv/ws')).toMatchObject({ holder: 'run:run_2', node: 'node-1' });
      await b.runLeases.end(run('run_2', 'ses_2'));
      expect(await b.repo.get('/srv/ws')).toBeUndefined();
    } finally {
      close();
    }
  });

  it('STORE-PG-lease-6: a sub-agent changes under its root run; outside a run nothing is taken; a cancel ends a wait', async () => {
    const { a, b, close } = twoNodes();
    try {
      const signal = new AbortController().signal;
      a.runLeases.begin(run('run_1', 'ses_1'), '/srv/ws', signal);
      a.runLeases.begin(run('run_1c', 'ses_1c', 'ses_1', 'run_1'), '/srv/ws', signal);
      await a.runLeases.guard(edit('ses_1c'));
      await a.runLeases.guard(edit('ses_1'));
      expect(await a.repo.get('/srv/ws')).toMatchObject({ holder: 'run:run_1' });
      // The sub-agent ending keeps its root's lease.
      await a.runLeases.end(run('run_1c', 'ses_1c', 'ses_1', 'run_1'));
      expect(await a.repo.get('/srv/ws')).toMatchObject({ holder: 'run:run_1' });

      // An operator's own call (no run of that session on this node) takes nothing.
      await b.runLeases.guard(edit('ses_other'));

      const controller = new AbortController();
      b.runLeases.begin(run('run_2', 'ses_2'), '/srv/ws', controller.signal);
      const waiting = b.runLeases.guard(edit('ses_2'));
      setTimeout(() => controller.abort(), 60);
      await expect(waiting).rejects.toMatchObject({ code: 'cancelled' });
      await b.runLeases.end(run('run_2', 'ses_2'));
      expect(await a.repo.get('/srv/ws')).toMatchObject({ holder: 'run:run_1' });
      await a.runLeases.end(run('run_1', 'ses_1'));
      expect(await a.repo.get('/srv/ws')).toBeUndefined();
    } finally {
      close();
    }
  });
});
