/**
 * A failed run over HTTP, against a real server and the scripted fake provider answering 401.
 * Pins: the session event stream's run.finished carries the classified failure (additive to the
 * event's fields); GET /v1/agent-runs/{id} has it on the run; the compat surface keeps its flat
 * error body and puts the line in it. No secret on any of them.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { compatServer } from './compat-helpers';
import { sseReader } from './sse-reader';

const SECRET = 'sk-live-abcdefghijklmnopqrstuvwxyz0123';
const rejected = () =>
  reply().httpError(401, { error: { message: `Incorrect API key provided: ${SECRET}` } });

describe('a failed run over HTTP', () => {
  it('SSE run.finished and the run carry what failed and the next step', async () => {
    const { post, get } = await compatServer([rejected()]);
    const session = (await (await post('/v1/sessions', {})).json()) as { session: { id: string } };
    const id = session.session.id;
    const stream = sseReader(await get(`/v1/sessions/${id}/events`));
    await stream.next(); // connected
    const sent = (await (await post(`/v1/sessions/${id}/messages`, { prompt: 'hi' })).json()) as {
      run_id: string;
    };
    let finished: { json: Record<string, any> } | undefined;
    for (let i = 0; i < 50 && !finished; i++) {
      const event = await stream.next(10_000);
      if (event.json?.type === 'run.finished' || event.event === 'run.finished') finished = event;
    }
    await stream.cancel();
    const payload = finished!.json.payload ?? finished!.json;
    expect(payload).toMatchObject({
      run_id: sent.run_id,
      status: 'failed',
      reason: 'provider_error',
      failure: {
        code: 'provider_unauthorized',
        summary: 'the provider rejected the API key (HTTP 401) (provider fake, model fake/m1)',
        next: expect.stringContaining('svc auth token fake --token-stdin'),
        details: { provider: 'fake', model: 'fake/m1', status: 401 },
      },
    });
    const run = (await (await get(`/v1/agent-runs/${sent.run_id}`)).json()) as {
      run: Record<string, unknown>;
    };
    expect(run.run.failure).toEqual(payload.failure);
    expect(JSON.stringify([payload, run])).not.toContain(SECRET);
  });

  it('the compat surface keeps its flat error body, with the line in it', async () => {
    const { post } = await compatServer([rejected()]);
    const response = await post('/v1/chat/completions', {
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const body = (await response.json()) as { error: string; code: number };
    expect(response.status).toBe(502);
    expect(Object.keys(body).sort()).toEqual(['code', 'error']);
    expect(body.error).toContain(
      'the provider rejected the API key (HTTP 401) (provider fake, model fake/m1); next: ',
    );
    expect(body.error).not.toContain(SECRET);
  });
});
