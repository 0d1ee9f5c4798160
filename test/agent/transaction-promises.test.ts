/**
 * The promises of a tool step (issue 17 item 2): a step's writes go through the store's
 * transaction wrapper several times (the step's start, the call, its result, the step's end), and
 * on SQLite that wrapper costs one promise a transaction (src/store/db.ts `atomicallyAsync`), not
 * an async function's chain of seven. Counted over a whole run against the scripted fake provider
 * (its server's promises included, the same in every build): the difference between a run of
 * many tool steps and one of few, a step.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countPromises } from '../helpers/promises';

/** The promises of one run of `steps` echo tool steps and a closing answer. */
async function runOf(steps: number): Promise<number> {
  const script = [
    ...Array.from({ length: steps }, (_, i) => reply().toolCall('echo', { text: `step ${i}` })),
    reply().text('done'),
  ];
  const { app } = await agentApp(script, { extraTools: [echoTool] });
  try {
    let status = '';
    const made = await countPromises(async () => {
      status = (await app.agent.run({ prompt: 'go', maxSteps: steps + 2, yolo: true })).status;
    });
    expect(status).toBe('completed');
    return made;
  } finally {
    await app.close();
  }
}

describe('the promises of a tool step', () => {
  it('ENGINE-CPU-185: a tool step of a run on SQLite makes at most 245 promises (with a 7-promise transaction wrapper: 270)', async () => {
    await runOf(1); // the modules and the statements of a run prepared once
    const few = await runOf(2);
    const many = await runOf(12);
    const perStep = (many - few) / 10;
    expect(perStep).toBeLessThanOrEqual(245);
  });
});
