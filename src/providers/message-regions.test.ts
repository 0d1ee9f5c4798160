/**
 * The prompt messages' stretch of a request body (./request-body.ts `bodyPieces`). Pins: the
 * bytes are the messages' wire JSON in place of their markers; a body's kept message bytes go out
 * as they are (the system prompt's bytes are not copied into a new buffer per request); a later
 * step whose stretch grows from an earlier one sends the same bytes as one spliced afresh.
 */
import { describe, expect, it } from 'vitest';
import { bodyPieces, messageMarker } from './request-body';

const marker = (owner: object, json: string) => {
  const text = messageMarker(owner, json);
  if (text === undefined) throw new Error('no marker');
  return JSON.stringify({ role: 'system', content: text });
};
const bytesOf = (pieces: (string | Buffer)[]) =>
  Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p))).toString('utf8');

describe('message markers in a request body', () => {
  it('ENGINE-CPU-96: requests sharing a system message send its kept bytes; steps that grow send the same bytes', () => {
    const owners = [{}, {}, {}, {}];
    const systemJson = JSON.stringify({
      role: 'system',
      content: `You are svc. “x” ${'rules '.repeat(900)}`,
    });
    const userJson = (n: number) => JSON.stringify({ role: 'user', content: `question ${n} – é` });
    const system = marker(owners[0], systemJson);
    const users = [marker(owners[1], userJson(1)), marker(owners[2], userJson(2))];
    const body = (messages: string[]) => `{"model":"m1","messages":[${messages.join(',')}],"stream":true}`;
    const expected = (messages: string[]) =>
      `{"model":"m1","messages":[${messages.join(',')}],"stream":true}`;

    const first = bodyPieces(body([system, users[0]]));
    const second = bodyPieces(body([system, users[1]]));
    expect(bytesOf(first)).toBe(expected([systemJson, userJson(1)]));
    expect(bytesOf(second)).toBe(expected([systemJson, userJson(2)]));
    // The system message's bytes are one kept buffer, the same in both requests.
    const systemBytes = (pieces: (string | Buffer)[]) =>
      pieces.find((p) => typeof p !== 'string' && p.length === Buffer.byteLength(systemJson));
    expect(systemBytes(first)).toBeDefined();
    expect(systemBytes(second)).toBe(systemBytes(first));

    // A run's next step: its stretch grows from the first request's; the same bytes as spliced afresh.
    const answer = marker(owners[3], JSON.stringify({ role: 'assistant', content: 'ok' }));
    const grown = bodyPieces(body([system, users[0], answer]));
    expect(bytesOf(grown)).toBe(
      expected([systemJson, userJson(1), JSON.stringify({ role: 'assistant', content: 'ok' })]),
    );
    // The same body again: the same bytes.
    expect(bytesOf(bodyPieces(body([system, users[0], answer])))).toBe(bytesOf(grown));
    expect(bytesOf(bodyPieces(body([system, users[0]])))).toBe(bytesOf(first));
  });
});
