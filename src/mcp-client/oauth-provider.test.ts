import { describe, expect, it } from 'vitest';
import { createMemoryAuthStore } from './auth-store';
import { checkAuthorizationUrl, createOAuthProvider } from './oauth-provider';

function provider() {
  const opened: string[] = [];
  const oauth = createOAuthProvider({
    id: 'tracker',
    serverUrl: 'https://mcp.example.com/mcp',
    store: createMemoryAuthStore(),
    clock: { now: () => 0 },
    redirectUrl: 'http://127.0.0.1:1234/mcp/oauth/callback',
    // A fake opener: what would go to the browser.
    onAuthorizationUrl: (url) => {
      opened.push(url.href);
    },
  });
  return { oauth, opened };
}

describe('the OAuth authorization URL', () => {
  it.each([
    'https://auth.example.com/authorize?client_id=x&state=y',
    'http://127.0.0.1:8080/authorize',
    'http://localhost/authorize',
    'http://[::1]:9/authorize',
  ])('%s goes to the opener', async (href) => {
    const { oauth, opened } = provider();
    await oauth.redirectToAuthorization(new URL(href));
    expect(opened).toEqual([href]);
    expect(oauth.authorizationUrl?.href).toBe(href);
  });

  it.each([
    ['file:///etc/passwd?client_id=x', 'scheme file: (no host)'],
    ['http://auth.example.com/authorize', 'scheme http: (host auth.example.com)'],
    ['http://127.0.0.1.evil.example/authorize', 'scheme http: (host 127.0.0.1.evil.example)'],
    ['ms-settings:privacy', 'scheme ms-settings: (no host)'],
    ['smb://host/share', 'scheme smb: (host host)'],
  ])('%s is refused before any opener sees it', async (href, shown) => {
    const { oauth, opened } = provider();
    await expect(oauth.redirectToAuthorization(new URL(href))).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining(
        `the authorization URL in the OAuth metadata of mcp.tracker has ${shown}`,
      ),
    });
    expect(opened).toEqual([]);
    expect(oauth.authorizationUrl).toBeUndefined();
  });

  it('names the server and the next step', () => {
    expect(() => checkAuthorizationUrl('x', new URL('file:///a'))).toThrow(
      "the authorization URL in the OAuth metadata of mcp.x has scheme file: (no host); svc opens only https: URLs (or http: on a loopback host): check the server's OAuth configuration",
    );
  });
});
