/**
 * callTool, the one call path. Pins each stage of its outcome:
 * - unknown: no tool answers to the name (not_found, no tool);
 * - gate: the registry's gate is closed (the reason kept in details), or the surface's own gate
 *   refuses; an `ungated` call of a bound definition runs anyway;
 * - input: one message `<tool>: <field>: expected <what>, received <what came>` with
 *   details.issues[{ path, expected, received, message }]; unknown keys; a secret-named field's
 *   value is never echoed; a throwing `assemble` is an input failure;
 * - run: an SvcError keeps its code; anything else is `internal` and marked crashed;
 * - ok: the value comes back redacted, with the validated input (defaults filled in);
 * - the central permission ask of a mutating tool that does not ask itself, then no second ask.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { makeTestApp } from '../../../test/helpers/make-test-app';
import { SvcError } from '../../errors';
import type { PermissionRequest } from '../../permissions/permission-service';
import { callTool, invokeTool } from './call-tool';
import { defineTool } from './define-tool';
import type { AnyTool, CallOutcome } from './types';

const echo = defineTool({
  name: 'echo_test',
  family: 'test',
  tag: 'primitive',
  description: 'Echo the text back, repeated.',
  input: z.strictObject({
    text: z.string().min(1).describe('Text.'),
    times: z.number().int().min(1).max(3).default(1).describe('Repeats.'),
    mode: z.enum(['plain', 'loud']).default('plain').describe('Mode.'),
    api_key: z.string().min(40).optional().describe('A secret-named field.'),
  }),
  mutates: false,
  run: async (_ctx, input) => ({ echoed: input.text.repeat(input.times), token: 'tok-should-be-masked' }),
});

const gated = defineTool({
  name: 'gated_test',
  family: 'test',
  tag: 'primitive',
  description: 'Never registered.',
  input: z.strictObject({}),
  mutates: false,
  gate: () => 'closed for the test',
  run: async () => ({ ran: true }),
});

const failing = defineTool({
  name: 'failing_test',
  family: 'test',
  tag: 'primitive',
  description: 'Fails as asked.',
  input: z.strictObject({ how: z.enum(['svc', 'bug']).describe('How to fail.') }),
  mutates: false,
  run: async (_ctx, input) => {
    if (input.how === 'svc') throw new SvcError('conflict', 'busy right now');
    throw new Error('boom');
  },
});

const asks: PermissionRequest[] = [];
const mutating = defineTool({
  name: 'mutating_test',
  family: 'test',
  tag: 'primitive',
  description: 'Mutates, and asks once more itself.',
  input: z.strictObject({ path: z.string().describe('Path.') }),
  mutates: true,
  run: async (ctx, input) => {
    await ctx.ask({ tool: 'mutating_test', title: `inner ${input.path}` });
    return { done: input.path };
  },
});

const TOOLS: AnyTool[] = [echo, gated, failing, mutating];

async function app() {
  return makeTestApp({ tools: TOOLS });
}

const failure = (outcome: CallOutcome) => {
  if (outcome.ok) throw new Error('expected a failure');
  return outcome;
};

describe('callTool', () => {
  it('answers unknown for a name no tool has', async () => {
    const a = await app();
    const outcome = failure(await callTool(a, 'nope', {}, { surface: 'cli' }));
    expect(outcome.stage).toBe('unknown');
    expect(outcome.tool).toBeUndefined();
    expect(outcome.error).toMatchObject({
      code: 'not_found',
      message: 'no tool named nope; see list_tool_capabilities',
    });
  });

  it('answers gate for a tool whose gate is closed, and runs it ungated when the surface says so', async () => {
    const a = await app();
    const outcome = failure(await callTool(a, 'gated_test', {}, { surface: 'http' }));
    expect(outcome.stage).toBe('gate');
    expect(outcome.tool?.name).toBe('gated_test');
    expect(outcome.error.message).toBe('tool gated_test is not registered: closed for the test');
    expect(outcome.error.details).toEqual({ tool: 'gated_test', reason: 'closed for the test' });
    const ungated = await callTool(a, 'gated_test', {}, { surface: 'cli' }, { tool: gated, ungated: true });
    expect(ungated).toMatchObject({ ok: true, value: { ran: true } });
  });

  it("answers gate when the surface's own gate refuses", async () => {
    const a = await app();
    const refused = new SvcError('forbidden', 'echo_test is withheld here');
    const outcome = failure(
      await callTool(a, 'echo_test', { text: 'a' }, { surface: 'agent' }, { gate: () => refused }),
    );
    expect(outcome).toMatchObject({ stage: 'gate', error: refused });
  });

  it('reports an invalid input as the tool, each field, what was expected and what came', async () => {
    const a = await app();
    const outcome = failure(
      await callTool(a, 'echo_test', { text: 3, times: 9, mode: 'quiet', color: 'red' }, { surface: 'mcp' }),
    );
    expect(outcome.stage).toBe('input');
    expect(outcome.error.code).toBe('invalid_input');
    expect(outcome.error.message).toBe(
      'echo_test: text: expected string, received number; times: expected at most 3, received 9; ' +
        'mode: expected one of plain, loud, received "quiet"; unknown field color',
    );
    expect(outcome.error.details?.issues).toEqual([
      {
        path: 'text',
        expected: 'string',
        received: 'number',
        message: 'text: expected string, received number',
      },
      {
        path: 'times',
        expected: 'at most 3',
        received: '9',
        message: 'times: expected at most 3, received 9',
      },
      {
        path: 'mode',
        expected: 'one of plain, loud',
        received: '"quiet"',
        message: 'mode: expected one of plain, loud, received "quiet"',
      },
      { path: '', expected: 'no such field', received: 'color', message: 'unknown field color' },
    ]);
    const missing = failure(await callTool(a, 'echo_test', {}, { surface: 'cli' }));
    expect(missing.error.message).toBe('echo_test: text: expected string, received nothing');
  });

  it("never echoes a secret-named field's value, even a wrong one", async () => {
    const a = await app();
    const outcome = failure(
      await callTool(a, 'echo_test', { text: 'a', api_key: 'short-secret-value' }, { surface: 'http' }),
    );
    expect(outcome.error.message).toBe(
      'echo_test: api_key: expected at least 40 characters, received "[REDACTED]"',
    );
    expect(JSON.stringify(outcome.error.details)).not.toContain('short-secret-value');
  });

  it('turns a throwing assemble into an input failure', async () => {
    const a = await app();
    const outcome = failure(
      await callTool(
        a,
        'echo_test',
        undefined,
        { surface: 'http' },
        {
          assemble: () => {
            throw new SvcError('invalid_input', 'invalid JSON body');
          },
        },
      ),
    );
    expect(outcome).toMatchObject({
      stage: 'input',
      error: { code: 'invalid_input', message: 'invalid JSON body' },
    });
  });

  it('keeps the code of an SvcError a tool throws, and marks anything else a crash', async () => {
    const a = await app();
    const expected = failure(await callTool(a, 'failing_test', { how: 'svc' }, { surface: 'tui' }));
    expect(expected).toMatchObject({
      stage: 'run',
      crashed: false,
      error: { code: 'conflict', message: 'busy right now' },
    });
    const bug = failure(await callTool(a, 'failing_test', { how: 'bug' }, { surface: 'tui' }));
    expect(bug).toMatchObject({
      stage: 'run',
      crashed: true,
      error: { code: 'internal', message: 'internal error: boom' },
    });
    expect((bug.error.cause as Error).message).toBe('boom');
    await expect(invokeTool(a, 'failing_test', { how: 'svc' }, { surface: 'tui' })).rejects.toMatchObject({
      code: 'conflict',
    });
  });

  it('returns the value redacted, with the validated input', async () => {
    const a = await app();
    a.redactor.add('secret-text-123');
    const outcome = await callTool(a, 'echo_test', { text: 'secret-text-123' }, { surface: 'cli' });
    expect(outcome).toMatchObject({
      ok: true,
      input: { text: 'secret-text-123', times: 1, mode: 'plain' },
      value: { echoed: '[REDACTED]', token: '[REDACTED]…sked' },
    });
  });

  it('asks once, centrally, for a mutating tool that does not ask itself', async () => {
    const a = await app();
    asks.length = 0;
    const outcome = await callTool(
      a,
      'mutating_test',
      { path: 'src/a.ts' },
      {
        surface: 'agent',
        ask: async (request) => {
          asks.push(request);
        },
      },
    );
    expect(outcome).toMatchObject({ ok: true, value: { done: 'src/a.ts' } });
    expect(asks).toEqual([
      { tool: 'mutating_test', title: 'mutating_test src/a.ts', details: { input: { path: 'src/a.ts' } } },
    ]);
    const denied = failure(
      await callTool(
        a,
        'mutating_test',
        { path: 'b' },
        {
          surface: 'agent',
          ask: async () => {
            throw new SvcError('forbidden', 'permission denied by the operator');
          },
        },
      ),
    );
    expect(denied).toMatchObject({ stage: 'run', crashed: false, error: { code: 'forbidden' } });
  });
});
