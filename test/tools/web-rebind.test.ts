/**
 * DNS rebinding: a name that answers the check before a request with an allowed address and the
 * connection a moment later with a cloud metadata address (a TTL of 0). The connection resolves the
 * name itself and refuses a blocked answer, so what connects is what was checked: the `fetch` and
 * `download` tools' requests and the MCP client's OAuth requests. Against a real server on
 * 127.0.0.1; the name is served by a scripted lookup (no DNS here).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { oauthFetch } from '../../src/mcp-client/oauth-fetch';
import { request } from '../../src/workspace/web';
import type { Lookup } from '../../src/workspace/web-target';

async function server(): Promise<{ port: number; hits: string[] }> {
  const hits: string[] = [];
  const srv: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => srv.close(() => resolve())));
  return { port: (srv.address() as AddressInfo).port, hits };
}

/** Answers `first` the first time a name is looked up, `then` every time after. */
function rebinding(first: string, then: string): { lookup: Lookup; asked: string[] } {
  const asked: string[] = [];
  const lookup: Lookup = async (host) => {
    asked.push(host);
    return [{ address: asked.length === 1 ? first : then }];
  };
  return { lookup, asked };
}

describe('a name that changes its answer between the check and the connection', () => {
  it('WEB-REBIND-1: fetch connects to the address its lookup gave: a name served only by it is reached', async () => {
    const { port, hits } = await server();
    const { lookup, asked } = rebinding('127.0.0.1', '127.0.0.1');
    const response = await request(
      fetch,
      new URL(`http://pinned.test:${port}/data`),
      10,
      undefined,
      'raw',
      lookup,
    );
    expect(await response.json()).toEqual({ ok: true });
    expect(hits).toEqual(['/data']);
    // Checked before the request and resolved by the connection: both through the same lookup.
    expect(asked).toEqual(['pinned.test', 'pinned.test']);
  });

  it('WEB-REBIND-2: allowed at the check, 169.254.169.254 at the connection: refused, forbidden, nothing sent', async () => {
    const { port, hits } = await server();
    const { lookup } = rebinding('127.0.0.1', '169.254.169.254');
    const url = new URL(`http://rebind.test:${port}/latest/meta-data/`);
    const refused = request(fetch, url, 10, undefined, 'raw', lookup);
    await expect(refused).rejects.toMatchObject({
      code: 'forbidden',
      details: { reason: 'blocked_address', address: '169.254.169.254' },
    });
    await expect(refused).rejects.toThrow(/rebind\.test, which resolves to 169\.254\.169\.254/);
    expect(hits).toEqual([]);
  });

  it("WEB-REBIND-3: the MCP client's OAuth request to a rebinding token endpoint is refused at the connection", async () => {
    const { port, hits } = await server();
    const { lookup } = rebinding('127.0.0.1', '169.254.169.254');
    const guarded = oauthFetch(fetch, { id: 'docs', serverUrl: 'http://127.0.0.1:1/mcp', lookup });
    // `localhost` is a loopback name, so http: is allowed for it; its answers come from the lookup.
    const sent = guarded(`http://localhost:${port}/token`, { method: 'POST', body: 'code=secret' });
    await expect(sent).rejects.toMatchObject({
      code: 'forbidden',
      details: { mcp_server: 'docs', reason: 'blocked_address', address: '169.254.169.254' },
    });
    expect(hits).toEqual([]);
  });
});
