/**
 * The promises of a tool step (issue 17 item 2): a step's writes go through the store's
 * transaction wrapper several times (the step's start, the call, its result, the step's end), and
 * on SQLite that wrapper costs one promise a transaction (src/store/db.ts `atomicallyAsync`), not
 * an async function's chain of seven. Counted over a whole run against the scripted fake provider
 * (its server's promises included, the same in every build): the difference between a run of
 * many tool steps and one of few, a step.
 */
import { describe, expect, it } from 'vitest';
import { promisesPerToolStep } from '../helpers/step-promises';

describe('the promises of a tool step', () => {
  it('ENGINE-CPU-185: a tool step of a run on SQLite makes at most 255 promises (214 here, 241 on the official CI; with a 7-promise transaction wrapper 270 here)', async () => {
    const perStep = await promisesPerToolStep();
    expect(perStep).toBeLessThanOrEqual(255);
  });
});
