import { describe, expect, it } from 'vitest';
import { callFailure, startFailure, transportFault } from './connection-errors';
import { MAX_ERROR_CHARS } from './peer-text';

const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202e]/;
const hostileBody = `boom\x1b[2J\x1b]0;evil-title\x07\u202e${'B'.repeat(5 * 1024 * 1024)}`;

describe("a server's text in an error", () => {
  it('a failed start shows an HTTP error body made safe and cut, saying so', () => {
    const failure = startFailure(new Error(`Error POSTing to endpoint (HTTP 500): ${hostileBody}`), {
      id: 'h5',
      config: { type: 'http', url: 'http://127.0.0.1:1/mcp' },
      startTimeoutMs: 10_000,
      hasStderr: false,
    });
    expect(failure.state).toBe('failed');
    expect(failure.error.startsWith('Error POSTing to endpoint (HTTP 500): boom<U+202E>BBB')).toBe(true);
    expect(failure.error).toMatch(/… \[cut: \d+ characters in all\]$/);
    expect(failure.error.length).toBeLessThan(MAX_ERROR_CHARS + 100);
    expect(failure.error).not.toMatch(CONTROLS);
  });

  it("a failed call's message is made safe and cut too", () => {
    const { error } = callFailure('mcp_h5_x', new Error(hostileBody), new AbortController().signal, {
      id: 'h5',
      timeoutMs: 30_000,
    });
    expect(error.message.startsWith('mcp_h5_x: MCP server h5: boom<U+202E>BBB')).toBe(true);
    expect(error.message.length).toBeLessThan(MAX_ERROR_CHARS + 100);
    expect(error.message).not.toMatch(CONTROLS);
  });
});

describe('transportFault: why the SDK closed a stdio connection', () => {
  const oversize = new Error('ReadBuffer exceeded maximum size of 10485760 bytes');
  const closed = Object.assign(new Error('MCP error -32000: Connection closed'), { code: -32000 });

  it('names a message over the size limit, at start and during a call', () => {
    const fault = transportFault(oversize);
    expect(fault).toBe('sent a message over the 10 MiB limit of one stdio MCP message');
    expect(transportFault(new Error('something else'))).toBeUndefined();
    const start = startFailure(closed, {
      id: 'big',
      config: { command: 'x' },
      startTimeoutMs: 10_000,
      hasStderr: false,
      fault,
    });
    expect(start.error).toBe(
      'the server sent a message over the 10 MiB limit of one stdio MCP message while starting, so svc closed the connection',
    );
    const call = callFailure('mcp_big_x', closed, new AbortController().signal, {
      id: 'big',
      timeoutMs: 30_000,
      fault,
    });
    expect(call.error.message).toBe(
      'mcp_big_x: MCP server big sent a message over the 10 MiB limit of one stdio MCP message during the call, so svc closed the connection',
    );
  });
});
