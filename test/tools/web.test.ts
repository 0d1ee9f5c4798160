/**
 * fetch and download against a local HTTP server on 127.0.0.1:0. Pins:
 * - HTML becomes markdown (or text, or stays html); JSON and text come back as is;
 * - binary content is refused by fetch; size caps truncate fetch and stop download;
 * - slow servers hit the timeout; bad URLs and schemes are clear errors;
 * - download asks, refuses to overwrite unless told, records history and publishes file.changed;
 * - link-local and cloud metadata addresses are refused, also as a redirect's target (found by probing).
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { blockedAddress, refuseBlockedTarget } from '../../src/workspace/web-target';
import { toolHarness } from './harness';

async function server(): Promise<string> {
  const srv: Server = createServer((req, res) => {
    switch (req.url) {
      case '/page':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          '<html><head><title>T</title><style>p{}</style><script>alert(1)</script></head><body><h1>Title</h1><p>Some <b>bold</b> and a <a href="https://example.com">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>',
        );
        return;
      case '/data.json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
        return;
      case '/image.png':
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2, 3]));
        return;
      case '/big':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(6 * 1024 * 1024));
        return;
      case '/slow':
        setTimeout(() => res.end('late'), 5000).unref();
        return;
      case '/to-metadata':
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
        return;
      case '/hop':
        res.writeHead(301, { location: '/data.json' });
        res.end();
        return;
      case '/missing':
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such page');
        return;
      default:
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.alloc(2048, 7));
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        srv.close(() => resolve());
        srv.closeAllConnections();
      }),
  );
  srv.unref();
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

describe('fetch', () => {
  it('converts HTML to markdown by default, and to text or raw html on request', async () => {
    const base = await server();
    const h = await toolHarness();
    const md = await h.call('fetch', { url: `${base}/page` });
    expect(md).toMatchObject({ status: 200, format: 'markdown', truncated: false });
    expect(md.content).toBe('# Title\n\nSome **bold** and a [link](https://example.com).\n\n* one\n* two');
    expect(h.asks[0]).toMatchObject({ tool: 'fetch', title: `fetch ${base}/page`, safe: true });
    const text = await h.call('fetch', { url: `${base}/page`, format: 'text' });
    expect(text.content).toBe('Title\n\nSome bold and a link.\n\n* one\n* two');
    const html = await h.call('fetch', { url: `${base}/page`, format: 'html' });
    expect(html.content).toContain('<h1>Title</h1>');
    const json = await h.call('fetch', { url: `${base}/data.json` });
    expect(json).toMatchObject({ content: '{"ok":true}', format: 'text', content_type: 'application/json' });
  });

  it('refuses binary content, truncates large bodies and reports HTTP errors', async () => {
    const base = await server();
    const h = await toolHarness();
    await expect(h.call('fetch', { url: `${base}/image.png` })).rejects.toThrow(
      /binary content.*use download/,
    );
    const big = await h.call('fetch', { url: `${base}/big` });
    expect(big.truncated).toBe(true);
    expect(big.content).toHaveLength(100_000);
    expect(h.modelText('fetch', big)).toContain('(truncated:');
    await expect(h.call('fetch', { url: `${base}/missing` })).rejects.toThrow(
      /answered HTTP 404: no such page/,
    );
  });

  it('times out slow servers and rejects bad URLs', async () => {
    const base = await server();
    const h = await toolHarness();
    await expect(h.call('fetch', { url: `${base}/slow`, timeout_seconds: 1 })).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringContaining('did not answer within 1 s'),
    });
    await expect(h.call('fetch', { url: 'not a url' })).rejects.toThrow(/not a valid URL/);
    await expect(h.call('fetch', { url: 'file:///etc/passwd' })).rejects.toThrow(/only http and https/);
  });
});

describe('blocked targets', () => {
  it('fetch and download refuse link-local and metadata addresses, directly, mapped, by name and behind a redirect; redirects elsewhere are followed', async () => {
    const base = await server();
    const h = await toolHarness();
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://0.0.0.0:1/',
    ]) {
      await expect(h.call('fetch', { url })).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringMatching(
          /a link-local or cloud metadata address; svc's web tools never fetch those/,
        ),
      });
    }
    await expect(h.call('fetch', { url: `${base}/to-metadata` })).rejects.toThrow(/169\.254\.169\.254/);
    await expect(h.call('download', { url: `${base}/to-metadata`, path: 'meta.txt' })).rejects.toThrow(
      /169\.254\.169\.254/,
    );
    const followed = (await h.call('fetch', { url: `${base}/hop` })) as {
      final_url: string;
      content: string;
    };
    expect(followed.final_url).toBe(`${base}/data.json`);
    expect(followed.content).toContain('"ok":true');
    // By name: the addresses a name resolves to are checked.
    await expect(
      refuseBlockedTarget(new URL('http://metadata.example/'), async () => [{ address: '169.254.169.254' }]),
    ).rejects.toThrow(/metadata\.example, which resolves to 169\.254\.169\.254/);
    await expect(
      refuseBlockedTarget(new URL('http://dev.example/'), async () => [{ address: '10.0.0.5' }]),
    ).resolves.toBeUndefined();
    expect(blockedAddress('127.0.0.1')).toBe(false);
    expect(blockedAddress('fd00:ec2::254')).toBe(true);
  });
});

describe('download', () => {
  it('saves a URL to a workspace file after asking, with history and file.changed', async () => {
    const base = await server();
    const h = await toolHarness();
    const result = await h.call('download', { url: `${base}/blob.bin`, path: 'assets/blob.bin' });
    expect(result).toMatchObject({ path: 'assets/blob.bin', bytes: 2048, change: 'create' });
    expect(readFileSync(join(h.app.workspace, 'assets/blob.bin')).equals(Buffer.alloc(2048, 7))).toBe(true);
    expect(h.asks[0]).toMatchObject({
      tool: 'download',
      title: `download ${base}/blob.bin → assets/blob.bin`,
    });
    expect((await h.app.ws.history.list())[0]).toMatchObject({
      tool: 'download',
      change: 'create',
      binary: true,
      after_size: 2048,
    });
    expect(h.busEvents.find((e) => e.type === 'file.changed')?.payload).toMatchObject({
      path: 'assets/blob.bin',
      change: 'create',
    });
  });

  it('refuses to overwrite unless asked to, and stops at max_bytes', async () => {
    const base = await server();
    const h = await toolHarness();
    writeFileSync(join(h.app.workspace, 'x.bin'), 'old');
    await expect(h.call('download', { url: `${base}/blob.bin`, path: 'x.bin' })).rejects.toThrow(
      /already exists; set overwrite: true/,
    );
    await h.call('download', { url: `${base}/blob.bin`, path: 'x.bin', overwrite: true });
    expect(readFileSync(join(h.app.workspace, 'x.bin')).length).toBe(2048);
    await expect(
      h.call('download', { url: `${base}/big`, path: 'big.txt', max_bytes: 1000 }),
    ).rejects.toThrow(/over the 1000-byte limit|larger than the 1000-byte limit/);
    await expect(
      h.call('download', { url: `${base}/blob.bin`, path: '../escape.bin' }),
    ).rejects.toMatchObject({
      code: 'forbidden',
    });
  });
});
