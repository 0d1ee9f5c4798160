/**
 * Reading a JSON request body for hand-written routes: empty → `{}`, malformed → a 400 SvcError
 * (`invalid JSON body`), anything but an object → 400.
 * @module
 */
import type { Context } from 'hono';
import { SvcError } from '../../errors';

export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SvcError('invalid_input', 'invalid JSON body');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new SvcError('invalid_input', 'the JSON body must be an object');
  }
  return body as Record<string, unknown>;
}
