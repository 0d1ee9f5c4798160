import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createFileAuthStore } from './auth-store';
import { MAX_DESCRIPTION_CHARS, MAX_ERROR_CHARS, MAX_LABEL_CHARS, peerJson } from './peer-text';
import {
  checkRemoteTool,
  contentText,
  MAX_SCHEMA_BYTES,
  MAX_SCHEMA_DEPTH,
  type RemoteTool,
  registryName,
  remoteInputSchema,
  remoteMutates,
  remoteToolDefinition,
} from './remote-tools';

describe('registryName', () => {
  it('prefixes and sanitizes to provider-safe names of at most 64 characters', () => {
    expect(registryName('github', 'create_issue')).toBe('mcp_github_create_issue');
    expect(registryName('my-srv.v2', 'do.thing-now')).toBe('mcp_my_srv_v2_do_thing_now');
    const long = registryName('server', 'x'.repeat(100));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^mcp_server_x+_[0-9a-f]{8}$/);
    expect(registryName('server', `${'x'.repeat(100)}y`)).not.toBe(long);
  });
});

describe('checkRemoteTool', () => {
  it('accepts a well-formed tool and reads its annotations', () => {
    expect(
      checkRemoteTool({
        name: 'read',
        inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        annotations: { readOnlyHint: true },
      }),
    ).toMatchObject({ ok: true, tool: { name: 'read', annotations: { readOnlyHint: true } } });
  });

  it.each([
    [null, 'a tool entry is not an object'],
    [{ inputSchema: { type: 'object' } }, 'a tool has no name'],
    [{ name: 'a' }, 'tool "a": inputSchema is not a JSON Schema object'],
    [
      { name: 'a', inputSchema: { type: 'array' } },
      'tool "a": inputSchema.type must be "object", got "array"',
    ],
    [
      { name: 'a', inputSchema: { type: 'object', properties: { x: 3 } } },
      'tool "a": inputSchema.properties.x is not a schema',
    ],
    [
      { name: 'a', inputSchema: { type: 'object', required: [1] } },
      'tool "a": inputSchema.required is not a list of names',
    ],
    [{ name: 'a', description: 5, inputSchema: { type: 'object' } }, 'tool "a": description is not a string'],
  ])('rejects %j: %s', (raw, reason) => {
    expect(checkRemoteTool(raw)).toEqual({ ok: false, reason });
  });
});

describe('checkRemoteTool: how deep and how large a schema may be', () => {
  /** An input schema whose property `d` nests `levels` properties deep. */
  const nested = (levels: number) => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { x: schema } };
    return { type: 'object', properties: { d: schema } };
  };

  it('takes a schema up to MAX_SCHEMA_DEPTH levels (objects and arrays) and rejects a deeper one', () => {
    expect(MAX_SCHEMA_DEPTH).toBe(64);
    // The root and `d` are 3 levels, then two (a properties map, a schema) per property: 3 + 2 * 31 = 65.
    expect(checkRemoteTool({ name: 'ok', inputSchema: nested(30) })).toMatchObject({ ok: true });
    for (const levels of [31, 3000]) {
      expect(checkRemoteTool({ name: 'deep', inputSchema: nested(levels) })).toEqual({
        ok: false,
        reason: 'tool "deep": inputSchema is nested deeper than 64 levels',
      });
    }
    const arrays = { type: 'object', enum: [JSON.parse(`${'['.repeat(70)}${']'.repeat(70)}`)] };
    expect(checkRemoteTool({ name: 'arr', inputSchema: arrays })).toMatchObject({ ok: false });
  });

  it('rejects a schema over MAX_SCHEMA_BYTES of JSON (a megabyte property description)', () => {
    expect(MAX_SCHEMA_BYTES).toBe(64 * 1024);
    const schema = (chars: number) => ({
      type: 'object',
      properties: { a: { type: 'string', description: 'S'.repeat(chars) } },
    });
    expect(checkRemoteTool({ name: 'fits', inputSchema: schema(60_000) })).toMatchObject({ ok: true });
    expect(checkRemoteTool({ name: 'big', inputSchema: schema(1 << 20) })).toEqual({
      ok: false,
      reason: 'tool "big": inputSchema is 1025 KiB of JSON, over the 64 KiB limit',
    });
  });

  it('shows a property name or type from the server safely in the reason', () => {
    const reason = (inputSchema: Record<string, unknown>) =>
      (checkRemoteTool({ name: 'a', inputSchema }) as { reason: string }).reason;
    expect(reason({ type: 'object', properties: { '\x1b]0;t\x07k\u202e': 3 } })).toBe(
      'tool "a": inputSchema.properties.k<U+202E> is not a schema',
    );
    expect(reason({ type: `\x1b[2J${'x'.repeat(10_000)}` }).length).toBeLessThan(200);
  });
});

describe('remoteInputSchema', () => {
  it('passes the remote JSON Schema through to z.toJSONSchema and accepts any object', () => {
    const schema = remoteInputSchema({
      $schema: 'http://json-schema.org/draft-07/schema#',
      id: 'legacy-id',
      type: 'object',
      properties: { q: { type: 'string', description: 'query' } },
      required: ['q'],
    });
    const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    expect(json).toMatchObject({
      type: 'object',
      properties: { q: { type: 'string', description: 'query' } },
      required: ['q'],
    });
    expect(json.id).toBeUndefined();
    expect(schema.safeParse({ q: 'x', extra: 1 }).success).toBe(true);
    expect(schema.safeParse('x').success).toBe(false);
  });
});

describe('contentText', () => {
  it('keeps text and describes other content', () => {
    expect(
      contentText({
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource', resource: { uri: 'file:///x', text: 'body' } },
          { type: 'resource_link', uri: 'file:///y' },
        ],
      }),
    ).toBe('a\n[image image/png, 3 bytes]\n[resource file:///x]\nbody\n[resource link file:///y]');
    expect(contentText({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
  });
});

describe('file auth store', () => {
  it('writes a 0600 file atomically and survives a corrupt one', () => {
    const dir = tmpWorkspace();
    const path = join(dir, 'svc', 'mcp-auth.json');
    const store = createFileAuthStore(path);
    expect(store.get('a')).toBeUndefined();
    store.set('a', { server_url: 'http://x/mcp', tokens: { access_token: 't' } });
    store.set('b', { server_url: 'http://y/mcp' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(store.get('a')).toEqual({ server_url: 'http://x/mcp', tokens: { access_token: 't' } });
    expect(store.delete('a')).toBe(true);
    expect(store.delete('a')).toBe(false);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      version: 1,
      servers: { b: { server_url: 'http://y/mcp' } },
    });
    writeFileSync(path, '{not json');
    expect(store.get('b')).toBeUndefined();
    store.set('c', { server_url: 'http://z/mcp' });
    expect(store.get('c')).toEqual({ server_url: 'http://z/mcp' });
  });
});

describe('remoteToolDefinition: what a server says about its tools', () => {
  const hostile = 'evil\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07\nALLOW\u202etxt.exe\u009b31m';
  const define = (tool: Partial<RemoteTool>) => {
    const calls: string[] = [];
    const asked: { title: string; details?: Record<string, unknown> }[] = [];
    const def = remoteToolDefinition(
      'srv',
      { name: 'x', inputSchema: { type: 'object' }, ...tool },
      async (name) => {
        calls.push(name);
        return { content: [] };
      },
    );
    const run = () =>
      def.run(
        {
          signal: new AbortController().signal,
          ask: async (request) => {
            asked.push(request as never);
          },
        },
        {},
      );
    return { def, calls, asked, run };
  };

  it('shows names, titles and descriptions without controls, escapes or bidi overrides', async () => {
    const { def, calls, asked, run } = define({
      name: hostile,
      description: `Does it.\t(fast)\r\n${hostile}`,
    });
    await run();
    const shown = 'evil ALLOW<U+202E>txt.exe';
    expect(asked[0].title).toBe(`${shown} on MCP server srv`);
    expect(asked[0].details?.mcp_tool).toBe(shown);
    expect(def.description).toBe(
      `Does it.\t(fast)\nevil\nALLOW<U+202E>txt.exe\n(Tool "${shown}" of the MCP server "srv".)`,
    );
    // The call still names the tool exactly as the server listed it.
    expect(calls).toEqual([hostile]);
    expect(JSON.stringify([asked, def.description])).not.toMatch(
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/,
    );
  });

  it("makes a server's error result safe and cuts it, saying so", async () => {
    const def = remoteToolDefinition('srv', { name: 'x', inputSchema: { type: 'object' } }, async () => ({
      isError: true,
      content: [{ type: 'text', text: `bad\x1b[2J\x1b]0;title\x07\u202eargs ${'E'.repeat(5_000_000)}` }],
    }));
    const error = await def
      .run({ signal: new AbortController().signal, ask: async () => {} }, {})
      .catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'invalid_input' });
    const message = (error as Error).message;
    expect(message.startsWith('mcp_srv_x: bad<U+202E>args EEE')).toBe(true);
    expect(message).toMatch(/… \[cut: 5000023 characters in all\]$/);
    expect(message.length).toBeLessThan(MAX_ERROR_CHARS + 100);
    expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
  });

  it('MCP-CLEAN-2: makes every string of a result safe without cutting it; base64 data stays as sent', async () => {
    const long = `\x1b]52;c;ZXZpbA==\x07${'R'.repeat(5_000_000)}\u202e`;
    const data = '\x1b[2J not really base64';
    const def = remoteToolDefinition('srv', { name: 'x', inputSchema: { type: 'object' } }, async () => ({
      content: [
        { type: 'text', text: long },
        { type: 'image', mimeType: 'image/png\x1b[2J', data },
        { type: 'resource', resource: { uri: 'u\x9b2K', blob: data, mimeType: 'a/b' } },
      ],
      structuredContent: { 'a\x1b[1A': [{ b: 'c\rd\x85' }] },
    }));
    const output = await def.run({ signal: new AbortController().signal, ask: async () => {} }, {});
    expect(output.content[0].text).toBe(`${'R'.repeat(5_000_000)}<U+202E>`);
    expect(output.content.slice(1)).toEqual([
      { type: 'image', mimeType: 'image/png', data },
      { type: 'resource', resource: { uri: 'u', blob: data, mimeType: 'a/b' } },
    ]);
    expect(output.structured_content).toEqual({ a: [{ b: 'c\nd' }] });
  });

  it('caps names, titles and descriptions with an ellipsis', async () => {
    const long = define({ name: 'n'.repeat(5000), description: 'd'.repeat(100_000) });
    await long.run();
    const title = long.asked[0].title.replace(' on MCP server srv', '');
    expect(title).toBe(`${'n'.repeat(MAX_LABEL_CHARS - 1)}…`);
    expect(long.def.description.startsWith(`${'d'.repeat(MAX_DESCRIPTION_CHARS - 1)}…\n`)).toBe(true);
    expect(long.def.description.length).toBeLessThan(MAX_DESCRIPTION_CHARS + MAX_LABEL_CHARS + 100);
    const titled = define({ title: `T\x1b[31m${'t'.repeat(500)}` });
    expect(titled.def.description.split('\n')[0]).toBe(`T${'t'.repeat(MAX_LABEL_CHARS - 2)}…`);
  });
});

describe('peerJson', () => {
  it('MCP-CLEAN-3: copies a value of any depth, a "__proto__" key as a plain key, without touching the original', () => {
    let deep: unknown = '\x1b[2Jleaf';
    for (let i = 0; i < 100_000; i++) deep = i % 2 ? [deep] : { x: deep };
    let copy = peerJson(deep) as unknown;
    for (let i = 0; i < 100_000; i++) copy = (copy as Record<string, unknown>)[i % 2 ? 'x' : 0];
    expect(copy).toBe('leaf');
    const parsed = JSON.parse('{"__proto__":{"polluted":"\\u001b[2Jyes"}}');
    const safe = peerJson(parsed) as Record<string, unknown>;
    expect(Object.getPrototypeOf(safe)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(safe, '__proto__')?.value).toEqual({ polluted: 'yes' });
    expect(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value.polluted).toBe('\x1b[2Jyes');
    expect(peerJson([1, null, true, 'a\x07'])).toEqual([1, null, true, 'a']);
    const only = peerJson(
      { 'k\x07': { description: 'd\x07', enum: ['e\x07'] } },
      { only: new Set(['description']) },
    );
    expect(only).toEqual({ 'k\x07': { description: 'd', enum: ['e\x07'] } });
  });
});

describe('remoteMutates: annotations are hints from the server', () => {
  const tool = (annotations?: RemoteTool['annotations']): RemoteTool => ({
    name: 'rm_rf_home',
    inputSchema: { type: 'object' },
    annotations,
  });

  it('counts every tool as mutating unless the block trusts the annotations', () => {
    expect(remoteMutates(tool({ readOnlyHint: true }))).toBe(true);
    expect(remoteMutates(tool({ readOnlyHint: true }), { trustAnnotations: false })).toBe(true);
    expect(remoteMutates(tool({ readOnlyHint: true }), { trustAnnotations: true })).toBe(false);
    expect(remoteMutates(tool(), { trustAnnotations: true })).toBe(true);
  });

  it('never counts a destructive tool as read-only, trusted or not', () => {
    const contradictory = tool({ readOnlyHint: true, destructiveHint: true });
    expect(remoteMutates(contradictory, { trustAnnotations: true })).toBe(true);
    const def = remoteToolDefinition('srv', contradictory, async () => ({}), { trustAnnotations: true });
    expect(def).toMatchObject({ mutates: true, asksPermission: true });
  });
});
