/**
 * Bad input to the MCP server, as a fuzzer sends it (issue 15, item 6). Pins:
 * - over stdio, a line that is not JSON answers -32700 and a JSON value that is not JSON-RPC
 *   answers -32600, with id null (or the request's id), and the connection keeps serving;
 * - a tools/call whose arguments is not an object answers -32602 with one short sentence (not a
 *   dump of validation issues), over stdio and over the in-memory transport alike.
 */
import { PassThrough } from 'node:stream';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { startMcpService } from '../../src/surfaces/mcp/service';
import { makeTestApp } from '../helpers/make-test-app';

const TOOL = 'svc_get_primitive_tools_status';
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
};

async function stdioService() {
  const app = await makeTestApp({ config: { services: { mcp: { exposed_tools: [TOOL] } } } });
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const service = await startMcpService(app, { transport: 'stdio', stdin, stdout });
  onTestFinished(() => service.close());
  const frames: Record<string, unknown>[] = [];
  let pending = '';
  stdout.on('data', (chunk) => {
    pending += String(chunk);
    for (let i = pending.indexOf('\n'); i !== -1; i = pending.indexOf('\n')) {
      frames.push(JSON.parse(pending.slice(0, i)));
      pending = pending.slice(i + 1);
    }
  });
  const send = async (line: string, count: number) => {
    const before = frames.length;
    stdin.write(`${line}\n`);
    for (let i = 0; i < 1000 && frames.length < before + count; i++)
      await new Promise((r) => setTimeout(r, 10));
    return frames.slice(before);
  };
  return { send };
}

describe('MCP server: malformed input', () => {
  it('answers a line that is not JSON with -32700 and keeps serving', async () => {
    const { send } = await stdioService();
    expect(await send('this is not json', 1)).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: the line is not valid JSON' },
      },
    ]);
    expect(await send('{"jsonrpc":"2.0","id":7,"method":', 1)).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: the line is not valid JSON' },
      },
    ]);
    expect(await send(JSON.stringify({ hello: 'world', id: 9 }), 1)).toEqual([
      {
        jsonrpc: '2.0',
        id: 9,
        error: {
          code: -32600,
          message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
        },
      },
    ]);
    const [init] = await send(JSON.stringify(INIT), 1);
    expect(init).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'svc' } } });
  });

  it('answers non-object tool arguments with -32602 and a short message', async () => {
    const { send } = await stdioService();
    await send(JSON.stringify(INIT), 1);
    await send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), 0);
    const call = (id: number, args: unknown) =>
      send(
        JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: args } }),
        1,
      );
    for (const [id, args, what] of [
      [2, [1, 2], 'an array'],
      [3, 'x', 'a string'],
      [4, 42, 'a number'],
      [5, null, 'null'],
    ] as const) {
      expect(await call(id, args)).toEqual([
        {
          jsonrpc: '2.0',
          id,
          error: {
            code: -32602,
            message: `Invalid params: ${TOOL}: arguments must be a JSON object, received ${what}`,
          },
        },
      ]);
    }
    const [ok] = await call(6, {});
    expect(ok).toMatchObject({ id: 6, result: { content: [{ type: 'text' }] } });
  });

  it('answers the same over any transport (in memory)', async () => {
    const app = await makeTestApp();
    const server = createMcpServer(app, { exposedTools: [TOOL] });
    const [client, serverSide] = InMemoryTransport.createLinkedPair();
    const received: JSONRPCMessage[] = [];
    client.onmessage = (message) => received.push(message);
    await server.connect(serverSide);
    await client.start();
    onTestFinished(() => server.close());
    await client.send(INIT as JSONRPCMessage);
    await client.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: TOOL, arguments: ['a'] },
    } as unknown as JSONRPCMessage);
    for (let i = 0; i < 1000 && received.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(received.find((m) => (m as { id?: number }).id === 2)).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: {
        code: -32602,
        message: `Invalid params: ${TOOL}: arguments must be a JSON object, received an array`,
      },
    });
  });
});
