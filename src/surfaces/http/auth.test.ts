/**
 * bearerAuth's per-request work (issue 17 item 3): an admitted request costs the bearer check and
 * nothing else; the error style of the route (flat for compat, text for some bindings) is looked
 * up only when the request is refused, and a refusal still answers in that style.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { bearerAuth } from './auth';
import type { ErrorStyle } from './errors';

function appWith(styles: string[]) {
  const hono = new Hono();
  hono.use(
    bearerAuth({
      token: () => 'secret-token',
      allowNoAuth: () => false,
      styleFor: (path: string): ErrorStyle => {
        styles.push(path);
        return 'flat';
      },
    }),
  );
  hono.post('/v1/chat/completions', (c) => c.json({ ok: true }));
  return hono;
}

describe('bearerAuth', () => {
  it('ENGINE-CPU-60: an admitted request looks up no error style; a refused one answers in its route style', async () => {
    const styles: string[] = [];
    const hono = appWith(styles);
    const admitted = await hono.request('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: 'Bearer secret-token' },
    });
    expect(admitted.status).toBe(200);
    expect(await admitted.json()).toEqual({ ok: true });
    expect(styles).toEqual([]);

    const refused = await hono.request('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: 'Bearer wrong' },
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="svc"');
    expect(await refused.json()).toEqual({
      error: 'authentication required: invalid bearer token',
      code: 401,
    });
    expect(styles).toEqual(['/v1/chat/completions']);
  });
});
