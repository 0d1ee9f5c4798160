/**
 * A compat request's send input (what `compat/prepare.ts` gives `app.agent.send`) is one literal,
 * not `{ ...send(id), joinTransaction, ...(tx ? { transaction } : {}), claimAlongside }` (issue 17
 * items 3–4, p-gcrate, p-sqlprofile Left 2): on Node 20 (V8 11.3) an object literal that starts
 * with a spread and defines more gives the object a map of its own, a new one each call from about
 * the eighth, allocated outside the young generation (only a full GC frees it). Pinned with V8's
 * natives syntax, as test/agent/object-maps.test.ts does: the send inputs of the last two of WARM
 * requests are one map, with what the spread gave. No timing.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { SendInput } from '../../src/agent/types';
import { reply } from '../helpers/fake-provider';
import { compatServer } from './compat-helpers';

const WARM = 30;

function sameMap(): (a: object, b: object) => boolean {
  setFlagsFromString('--allow-natives-syntax');
  return new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
}

describe('a compat request’s send input is one map', () => {
  it('COMPAT-PERF-301: the send inputs of compat requests are one map every request, the same values', async () => {
    const script = Array.from({ length: WARM }, (_, i) => reply().text(`answer ${i}`));
    const { app, client } = await compatServer(script);
    const inputs: SendInput[] = [];
    const send = app.agent.send.bind(app.agent);
    app.agent.send = async (input) => {
      inputs.push(input);
      return await send(input);
    };
    const same = sameMap();
    for (let i = 0; i < WARM; i++) {
      const completion = await client.chat.completions.create({
        model: 'fake/m1',
        messages: [{ role: 'user', content: `hello ${i}` }],
      });
      expect(completion.choices[0].message.content).toBe(`answer ${i}`);
    }
    expect(inputs).toHaveLength(WARM);
    const [a, b] = inputs.slice(-2);
    expect(same(a, b)).toBe(true);
    const [run] = await app.runs.list({ limit: 1 });
    expect(b.sessionId).toBe(run.session_id);
    expect(b.session?.id).toBe(run.session_id);
    expect(b).toMatchObject({
      prompt: `hello ${WARM - 1}`,
      model: 'fake/m1',
      origin: 'openai_compat',
      ifBusy: 'queue',
      joinTransaction: true,
    });
    expect(typeof b.claimAlongside).toBe('function');
    expect((b as { start?: boolean }).start).toBeUndefined();
  });
});
