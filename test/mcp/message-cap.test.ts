/**
 * What an MCP server over HTTP sends back is size-capped (src/mcp-client/capped-fetch.ts): a tool
 * result over the cap fails that call with a clear error, as plain JSON and as an event stream,
 * and the server keeps working for calls under it. The cap is injected small, so the bytes stay
 * modest.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { nullLogger } from '../../src/log';
import { createMemoryAuthStore } from '../../src/mcp-client/auth-store';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/mcp-client/capped-fetch';
import { McpConnection } from '../../src/mcp-client/connection';
import { fakeMcpHttpServer } from '../helpers/fake-mcp-server';

const CAP = 64 * 1024;

async function connect(url: string, type: 'http' | 'sse', maxMessageBytes?: number) {
  const connection = new McpConnection({
    id: 'remote',
    config: { type, url },
    workspace: process.cwd(),
    env: {},
    log: nullLogger,
    clock: { now: () => Date.now() },
    fetch,
    maxMessageBytes,
    authStore: createMemoryAuthStore(),
    onSecret: () => {},
    setTools: (defs) => {
      void defs;
      return [];
    },
    reconnectDelaysMs: [],
    crashWindowMs: 60_000,
  });
  onTestFinished(() => connection.close());
  await connection.connect();
  expect(connection.status()).toMatchObject({ state: 'connected' });
  return connection;
}

const text = (result: { content?: { text?: string }[] }) => result.content?.[0]?.text ?? '';

describe('MCP client: the size of what an HTTP server sends back', () => {
  it.each([
    ['an event stream', false],
    ['plain JSON', true],
  ])(
    'a tool result over the cap fails that call clearly (%s); smaller ones go through',
    async (_, jsonResponse) => {
      const server = await fakeMcpHttpServer({ bigTool: true, jsonResponse });
      const connection = await connect(server.url, 'http', CAP);
      const signal = new AbortController().signal;
      expect(text(await connection.callTool('big', { bytes: 1000 }, signal))).toHaveLength(1000);
      await expect(connection.callTool('big', { bytes: CAP * 4 }, signal)).rejects.toMatchObject({
        code: 'unavailable',
        message:
          "mcp_remote_big: MCP server remote: the server's answer is over the 65536 bytes limit of one MCP message; the call was stopped",
      });
      // The connection keeps serving calls under the cap.
      expect(text(await connection.callTool('big', { bytes: CAP / 2 }, signal))).toHaveLength(CAP / 2);
      expect(connection.status().state).toBe('connected');
    },
  );

  it('the default cap is 32 MiB and a result under it goes through', async () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(32 * 1024 * 1024);
    const server = await fakeMcpHttpServer({ bigTool: true });
    const connection = await connect(server.url, 'http');
    const result = await connection.callTool('big', { bytes: CAP * 4 }, new AbortController().signal);
    expect(text(result)).toHaveLength(CAP * 4);
  });
});
