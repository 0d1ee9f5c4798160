/**
 * A compat request resolves its model once (issue 17 item 3): the surface resolves the request's
 * `model`, and its run binds that model to its own metering (`ModelResolver.bind`) instead of
 * resolving it again. What the run records stays: the `model.resolved` ledger event, the run's
 * model, and a cost-ledger call billed as `compat` to the run and its session. A new session is
 * made with the title its run gives it, so the run's start does not update the session row.
 */
import { describe, expect, it } from 'vitest';
import type { ResolveRequest } from '../../src/providers/types';
import { reply } from '../helpers/fake-provider';
import { compatServer } from './compat-helpers';

describe('compat model resolution', () => {
  it('COMPAT-08: a compat request resolves its model once; its run records and meters it as before', async () => {
    const { app, client } = await compatServer([reply().text('one').usage(10, 2)]);
    const asked: ResolveRequest[] = [];
    const resolve = app.models.resolve.bind(app.models);
    app.models.resolve = async (request = {}) => {
      asked.push(request);
      return await resolve(request);
    };

    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(completion.choices[0].message.content).toBe('one');
    expect(asked).toHaveLength(1);

    const [run] = await app.runs.list({ limit: 1 });
    expect(run).toMatchObject({ model: 'fake/m1', status: 'completed', origin: 'openai_compat' });
    const events = await app.runs.events(run.id);
    const resolved = events.filter((e) => e.type === 'model.resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0].payload).toMatchObject({ model: 'fake/m1', source: 'explicit' });

    const calls = await app.telemetry.ledger.calls({ sessionId: run.session_id });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ purpose: 'compat', run_id: run.id, provider: 'fake', model: 'm1' });
  });

  it('COMPAT-02: a new compat session is made with its title; the run start does not update its row', async () => {
    const { app, client } = await compatServer([reply().text('two')]);
    const types: string[] = [];
    app.bus.subscribe('*', (event) => types.push(event.type));
    await client.chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'write a haiku\nabout svc' }],
    });
    const [run] = await app.runs.list({ limit: 1 });
    expect((await app.sessions.require(run.session_id)).title).toBe('write a haiku');
    expect(types).toContain('session.created');
    expect(types).toContain('run.finished');
    expect(types).not.toContain('session.updated');
  });

  it('COMPAT-08: bind hands over only a model its resolver made, for a request selecting that model', async () => {
    const { app } = await compatServer([]);
    const resolved = await app.models.resolve({ selector: 'fake/m1' });
    const bound = app.models.bind(resolved, { selector: 'fake/m1', runId: 'run_x', call_purpose: 'compat' });
    expect(bound).toMatchObject({ selector: 'fake/m1', model_id: 'm1', source: 'explicit' });
    expect(bound?.language_model).not.toBe(resolved.language_model);
    expect(bound?.info).toEqual(resolved.info);
    expect(app.models.bind(resolved, { selector: 'fake/m2' })).toBeUndefined();
    expect(app.models.bind({ ...resolved }, { selector: 'fake/m1' })).toBeUndefined();
  });
});
