import { describe, expect, it } from 'vitest';
import type { Logger } from '../log';
import type { AgentDeps, AgentHost } from './deps';
import type { HeldStepEnd } from './last-step-end';
import { closeRuns } from './run-cancel';
import { createAgentCore } from './session-runtime';

/** A held step end whose send alone is counted. */
function heldEnd(sent: string[], name: string): HeldStepEnd {
  return {
    first: {} as HeldStepEnd['first'],
    events: [],
    written: () => {},
    alone: async () => {
      sent.push(name);
    },
  };
}

const log = { warn: () => {} } as unknown as Logger;
const core = () => createAgentCore({} as AgentDeps, { log } as unknown as AgentHost);

describe('LastEnds: the held last step ends of one agent service', () => {
  it('STORE-PG-591: two services keep their held ends apart (the same run id), a hand-over sends its own and drops it, and a close keeps nothing for a finish that did not come', async () => {
    const a = core();
    const b = core();
    const sent: string[] = [];
    a.lastEnds.hold('run_1', heldEnd(sent, 'a'));
    b.lastEnds.hold('run_1', heldEnd(sent, 'b'));
    expect(a.lastEnds.held('run_1')).not.toBe(b.lastEnds.held('run_1'));
    // A stop on `a` sends `a`'s alone; `b`'s is still held for its finish.
    await a.lastEnds.send('run_1', log);
    expect(sent).toEqual(['a']);
    expect(b.lastEnds.held('run_1')).toBeDefined();
    // A hand-over sends its held end and keeps nothing.
    b.lastEnds.hold('run_2', heldEnd(sent, 'b2'));
    await b.lastEnds.release('run_2', log);
    expect(sent).toEqual(['a', 'b2']);
    expect(b.lastEnds.size).toBe(1);
    // `a`'s run never reached its finish (its send stays kept for one): the close forgets it, sent.
    expect(a.lastEnds.size).toBe(1);
    await closeRuns(a);
    expect(a.lastEnds.size).toBe(0);
    expect(b.lastEnds.size).toBe(1);
    // The finish takes `b`'s (never sent alone).
    expect(await b.lastEnds.take('run_1')).toBeDefined();
    expect(b.lastEnds.size).toBe(0);
    expect(sent).toEqual(['a', 'b2']);
  });

  it('STORE-PG-701: a close writes what is still held before it answers: an end never sent goes alone, a send in flight is awaited, a refused one is logged and one that never answers is given up after the close’s bound, logged; then nothing is kept (was: all dropped unwritten, the close at once)', async () => {
    const warned: string[] = [];
    const logged = { warn: (message: string) => warned.push(message) } as unknown as Logger;
    const a = createAgentCore({} as AgentDeps, { log: logged } as unknown as AgentHost);
    const order: string[] = [];
    let openSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => {
      openSlow = resolve;
    });
    const end = (alone: () => Promise<void>): HeldStepEnd => ({
      first: {} as HeldStepEnd['first'],
      events: [],
      written: () => {},
      alone,
    });
    a.lastEnds.hold(
      'run_held',
      end(async () => {
        order.push('held sent');
        openSlow();
      }),
    );
    a.lastEnds.hold(
      'run_slow',
      end(async () => {
        await slowGate;
        order.push('slow answered');
      }),
    );
    a.lastEnds.hold(
      'run_refused',
      end(async () => {
        order.push('refused sent');
        throw new Error('refused');
      }),
    );
    a.lastEnds.hold(
      'run_stuck',
      end(() => new Promise<void>(() => {})),
    );
    // The slow one's send was in flight before the close (a stop's release).
    const inFlight = a.lastEnds.send('run_slow', logged);
    expect(inFlight).toBeDefined();
    await closeRuns(a).then(() => order.push('closed'));
    expect(order).toEqual(['held sent', 'refused sent', 'slow answered', 'closed']);
    expect(warned).toEqual(['run step end failed', 'held step ends not written before the close']);
    expect(a.lastEnds.size).toBe(0);
  });
});
