import { describe, expect, it } from 'vitest';
import { checkOAuthEndpoint, oauthFetch } from './oauth-fetch';

describe('oauthFetch', () => {
  it("leaves the configured server's origin alone and checks every other URL before sending", async () => {
    const sent: string[] = [];
    const base: typeof fetch = async (input) => {
      sent.push(String(input));
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    };
    const guarded = oauthFetch(base, { id: 'x', serverUrl: 'http://mcp.internal:8080/mcp' });
    await guarded('http://mcp.internal:8080/.well-known/oauth-protected-resource/mcp');
    await guarded('https://auth.example.com/token', { method: 'POST' });
    await expect(guarded('http://auth.example.com/token', { method: 'POST' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(sent).toEqual([
      'http://mcp.internal:8080/.well-known/oauth-protected-resource/mcp',
      'https://auth.example.com/token',
    ]);
  });

  it('refuses a host name that resolves to a cloud metadata address', async () => {
    const lookup = async () => [{ address: '169.254.169.254' }];
    await expect(checkOAuthEndpoint('x', new URL('https://metadata.example/token'), lookup)).rejects.toThrow(
      'the OAuth metadata of mcp.x names the endpoint https://metadata.example/token, at 169.254.169.254, a link-local or cloud metadata address',
    );
    await expect(
      checkOAuthEndpoint('x', new URL('https://auth.example/token'), async () => [
        { address: '203.0.113.5' },
      ]),
    ).resolves.toBeUndefined();
  });
});
