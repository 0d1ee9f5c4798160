/**
 * A run stopped while its preparation's writes are held with its first step's `phase` on
 * PostgreSQL (issue 18 item 6, p-pgprep3, src/agent/held-event.ts `holdPreparation`): since the
 * first step's start they ride in the statement that takes the `phase` (here the stop's release
 * of the step's held text), and a stopper that waits for what the run held (`cancelRun`,
 * `StopState.written`) waits for that statement: when it answers, `model.resolved`,
 * `prompt.assembled` and the step's `phase` are stored, and the run ends with SQLite's shape.
 * A parity pin: it passes on the base (the writes made at the step's start) and without the
 * stopper's wait (its own read answered after that statement in every run here).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { atTextDelta } from '../helpers/held-step';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a run stopped with its preparation held on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-553: cancelRun at the second delta of the first step’s held text answers once model.resolved, prompt.assembled and the phase are stored; the run’s shape SQLite’s', async () => {
    // The model's finish (chunk 3) waits for the cancel's answer: it lands at the second delta on
    // both stores whatever the load (p-pgcompat7: the first text is written at its read's end, so
    // a slow cancel could come after the stream's end).
    let answered = (_done: Promise<unknown>) => {};
    const script = () => {
      const done = new Promise<unknown>((resolve) => {
        answered = resolve;
      });
      return [reply().text('one two three four five six seven').slow(5).pauseAt(3, done), reply().text('no')];
    };
    /** The run's event types stored when `cancelRun` answered, per store. */
    const atAnswer: string[][] = [];
    const spies: (() => void)[] = [];
    const started = (app: App) => {
      spies.push(
        atTextDelta(2, (recorder) => {
          const id = (recorder as unknown as { options: { runId: string } }).options.runId;
          answered(
            app.agent
              .cancelRun(id)
              .then(async () => atAnswer.push((await app.runs.events(id)).map((e) => e.type))),
          );
        }),
      );
    };
    const lite = await storeRun(undefined, script(), { tools: [], title: 'cancel prep', closers, started });
    for (const restore of spies.splice(0)) restore();
    try {
      const r = await storeRun(pg.cluster(), script(), { tools: [], title: 'cancel prep', closers, started });
      expect(lite.status).toBe('cancelled');
      expect(r.status).toBe('cancelled');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
      expect(atAnswer).toHaveLength(2);
      for (const types of atAnswer)
        expect(types.filter((t) => ['model.resolved', 'prompt.assembled', 'phase'].includes(t))).toEqual([
          'phase',
          'model.resolved',
          'prompt.assembled',
          'phase',
        ]);
    } finally {
      for (const restore of spies.splice(0)) restore();
    }
  });
});
