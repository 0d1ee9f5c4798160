/**
 * A pack changes what the agent really does: its preamble reaches the model in the system prompt
 * of the session's turns, and its policy removes tools from what the model is offered.
 */
import { describe, expect, it } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { writeFiles } from '../helpers/tmp-workspace';
import { PREAMBLE_MARKER, REVIEW_PACK } from './fixtures';

describe('operating pack in the agent loop', () => {
  it('OPMODE-26 effect: the active pack preamble is in the request the model receives, and its denied tool is not offered', async () => {
    const { app, provider } = await agentApp([reply().text('first'), reply().text('second')], {
      // tool_exposure all: every effective tool in the request (auto defers on the fake's unknown window).
      extraConfig: { options: { operating_packs: true, tool_exposure: 'all' } },
    });
    writeFiles(app.workspace, { '.svc/packs/review/pack.toml': REVIEW_PACK });
    const packed = await app.agent.createSession({ title: 'packed' });
    const plain = await app.agent.createSession({ title: 'plain' });
    await app.packs!.activate(packed.id, 'review');
    await app.agent.run({ sessionId: packed.id, prompt: 'hello' });
    await app.agent.run({ sessionId: plain.id, prompt: 'hello' });
    const [withPack, withoutPack] = provider.requests.map((r) => JSON.stringify(r.body));
    expect(withPack).toContain(PREAMBLE_MARKER);
    expect(withoutPack).not.toContain(PREAMBLE_MARKER);
    const offered = (i: number) =>
      (provider.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered(0)).not.toContain('config');
    expect(offered(1)).toContain('config');
  });
});
