import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { StrictStdioServerTransport } from './stdio-transport';

describe('StrictStdioServerTransport', () => {
  it('a line over the limit is one parse error and its tail is dropped to its newline, not read as new lines', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const transport = new StrictStdioServerTransport(stdin, stdout);
    const messages: unknown[] = [];
    transport.onmessage = (message) => messages.push(message);
    await transport.start();
    const frames: string[] = [];
    stdout.on('data', (chunk: Buffer) => frames.push(...chunk.toString().split('\n').filter(Boolean)));
    // 11 MiB of one line in 1 MiB chunks (over the limit at the last), then its tail: a JSON-RPC
    // request that, read as a line of its own, would have been run.
    const mib = Buffer.alloc(1024 * 1024, 'x');
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"');
    for (let i = 0; i < 11; i++) stdin.write(mib);
    stdin.write('{"jsonrpc":"2.0","id":9,"method":"smuggled"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(frames.map((f) => JSON.parse(f))).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: a line over 10485760 bytes' },
      },
    ]);
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
    await transport.close();
  });
});
