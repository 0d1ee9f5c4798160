import { describe, expect, it } from 'vitest';
import { SvcError } from '../errors';
import { networkDenial, writeDenial } from '../sandbox/denials';
import {
  classifyProviderError,
  classifySandboxDenial,
  classifyToolError,
  failureLine,
  safeUrl,
} from './failure';

const ctx = { provider: 'fake', model: 'fake/m1', baseUrl: 'http://127.0.0.1:1234/v1' };

function apiCallError(fields: Record<string, unknown>) {
  return Object.assign(new Error(String(fields.message ?? 'failed')), { name: 'AI_APICallError', ...fields });
}

describe('classifyProviderError', () => {
  it('reads the last error of an AI_RetryError and counts the attempts', () => {
    const last = apiCallError({
      statusCode: 503,
      message: 'overloaded',
      url: 'http://127.0.0.1:1234/v1/chat/completions',
    });
    const retry = Object.assign(new Error('Failed after 3 attempts'), {
      name: 'AI_RetryError',
      errors: [last, last, last],
      lastError: last,
    });
    expect(classifyProviderError(retry, ctx)).toMatchObject({
      code: 'provider_server_error',
      details: { status: 503, attempts: 3, url: 'http://127.0.0.1:1234/v1/chat/completions' },
    });
  });

  it('keeps the credential hint of the recovery layer for a 401 and names 403 apart', () => {
    const cause = apiCallError({ statusCode: 401, message: 'bad key' });
    const wrapped = new SvcError('unauthorized', 'fake: the provider rejected the credential', {
      cause,
      details: { provider: 'fake', status: 401 },
    });
    const failure = classifyProviderError(wrapped, { ...ctx, authHint: 'set FAKE_API_KEY' });
    expect(failure.code).toBe('provider_unauthorized');
    expect(failure.next).toBe('set FAKE_API_KEY; then svc config show-provider-status');
    const forbidden = new SvcError('unauthorized', 'fake: rejected', {
      cause: apiCallError({ statusCode: 403, message: 'no access' }),
      details: { status: 403 },
    });
    expect(classifyProviderError(forbidden, ctx).code).toBe('provider_forbidden');
  });

  it('tells a refused connection, a DNS failure and a timeout apart from the cause code', () => {
    const network = (code: string) =>
      apiCallError({
        message: `Cannot connect to API: ${code}`,
        cause: Object.assign(new Error(code), { code }),
      });
    expect(classifyProviderError(network('ECONNREFUSED'), ctx).code).toBe('connection_refused');
    expect(classifyProviderError(network('ENOTFOUND'), ctx).code).toBe('dns_failure');
    expect(classifyProviderError(network('EAI_AGAIN'), ctx).code).toBe('dns_failure');
    expect(classifyProviderError(network('ECONNRESET'), ctx).code).toBe('network_error');
    const timeout = new DOMException('no response within 5 s', 'TimeoutError');
    expect(classifyProviderError(timeout, { ...ctx, timeoutSeconds: 5 })).toMatchObject({
      code: 'provider_timeout',
      summary: 'no answer from the provider within 5 s (provider fake, model fake/m1)',
    });
  });

  it('reads an error part a provider streamed (no status)', () => {
    const part = {
      message: 'prompt is too long: 210000 tokens > 200000 maximum',
      type: 'invalid_request_error',
    };
    expect(classifyProviderError(part, ctx).code).toBe('context_overflow');
    expect(classifyProviderError({ message: 'something odd' }, ctx)).toMatchObject({
      code: 'provider_error',
      summary: 'the provider call failed: "something odd" (provider fake, model fake/m1)',
    });
  });

  it('never shows credentials or the query of a URL', () => {
    expect(safeUrl('https://user:pw@example.com/v1?key=abc')).toBe('https://example.com/v1');
    const failure = classifyProviderError(apiCallError({ message: 'x', cause: { code: 'ECONNREFUSED' } }), {
      ...ctx,
      baseUrl: 'http://user:hunter22@127.0.0.1:1/v1?api_key=zzz',
    });
    expect(JSON.stringify(failure)).not.toMatch(/hunter22|zzz/);
  });
});

describe('classifyToolError', () => {
  it('classifies the operator, the headless rule, the bash rules and the sandbox', () => {
    expect(
      classifyToolError('edit', {
        code: 'forbidden',
        message: 'permission denied by the operator',
        details: { reason: 'denied', tool: 'edit' },
      }),
    ).toMatchObject({ code: 'tool_refused', summary: 'edit was denied by the operator' });
    expect(
      classifyToolError('bash', {
        code: 'forbidden',
        message: 'bash: privilege escalation',
        details: { analysis: { verdict: 'block', reason: 'privilege escalation (sudo)' } },
      }),
    ).toMatchObject({
      code: 'sandbox_denied',
      summary: 'bash refused by the command rules: privilege escalation (sudo)',
    });
    expect(
      classifyToolError('bash', {
        code: 'unavailable',
        message: 'sandbox cannot run',
        details: { sandbox: 'bwrap', error: 'no userns' },
      }),
    ).toMatchObject({ code: 'sandbox_denied', next: expect.stringContaining('options.sandbox.mode') });
    expect(classifyToolError('view', { code: 'not_found', message: 'no such file' })).toBeUndefined();
  });

  it('says what the OS sandbox stopped and which key allows it', () => {
    expect(classifySandboxDenial('bash', { ...writeDenial('/etc/hosts') })).toMatchObject({
      code: 'sandbox_denied',
      summary: 'bash: the sandbox blocked a write to /etc/hosts outside the workspace',
      next: 'allow that directory with options.sandbox.allow_write in svc.toml',
    });
    expect(classifySandboxDenial('bash', { ...networkDenial() })).toMatchObject({
      summary: 'bash: the sandbox has no network (options.sandbox.network = "none")',
      next: 'set options.sandbox.network = "host" in svc.toml to allow it, or work offline',
    });
  });

  it('formats the one line as summary then next step', () => {
    expect(failureLine({ summary: 'it broke', next: 'fix it' })).toBe('it broke; next: fix it');
  });
});
