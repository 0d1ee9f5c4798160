import { describe, expect, it } from 'vitest';
import { nodeRuntimeCheck } from './node-runtime';

const day = (iso: string) => new Date(`${iso}T12:00:00Z`);

describe('svc doctor: the Node.js runtime', () => {
  it('a supported line before its end of life is ok, with the date', () => {
    expect(nodeRuntimeCheck('24.22.3', day('2026-12-06'))).toEqual({
      name: 'node',
      status: 'ok',
      detail: 'Node 24.22.3 (supported until 2028-04-30)',
    });
    expect(nodeRuntimeCheck('20.19.0', day('2026-04-30')).status).toBe('ok');
  });

  it('Node 20 past its end of life warns and names the line to install', () => {
    const check = nodeRuntimeCheck('20.20.2', day('2026-05-01'));
    expect(check.status).toBe('warn');
    expect(check.detail).toBe(
      'Node 20.20.2 is past its end of life (2026-04-30) and gets no more security fixes; install Node 24 (svc supports 20, 22 and 24; a busy service warms up with the least CPU on 24)',
    );
    expect(nodeRuntimeCheck('22.23.5', day('2027-05-01')).status).toBe('warn');
  });

  it('a line svc does not support warns; a newer one than tested is ok', () => {
    expect(nodeRuntimeCheck('23.11.0', day('2026-12-06'))).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(/^Node 23\.11\.0 is not a supported line; install Node 24/),
    });
    expect(nodeRuntimeCheck('26.1.0', day('2026-12-06'))).toEqual({
      name: 'node',
      status: 'ok',
      detail: 'Node 26.1.0 (newer than the tested 20, 22 and 24)',
    });
  });
});
