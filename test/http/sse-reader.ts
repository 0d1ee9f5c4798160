/**
 * A small SSE reader for tests: parses a Response body into events (and comments) as the wire
 * has them, with a timeout on every wait so a missing event fails instead of hanging.
 * @module
 */

export interface WireEvent {
  event: string;
  id?: string;
  data: string;
  retry?: number;
  json: any;
}

export interface SseReader {
  /** The next event (comments skipped but recorded); throws after timeoutMs. */
  next(timeoutMs?: number): Promise<WireEvent>;
  /** Collect `count` events. */
  take(count: number, timeoutMs?: number): Promise<WireEvent[]>;
  /** Resolves true when the stream ends within timeoutMs (events read meanwhile are kept). */
  ended(timeoutMs?: number): Promise<boolean>;
  comments: string[];
  /** Every event read so far. */
  seen: WireEvent[];
  cancel(): Promise<void>;
}

export function sseReader(response: Response): SseReader {
  if (!response.body) throw new Error('response has no body');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const queue: WireEvent[] = [];
  const comments: string[] = [];
  const seen: WireEvent[] = [];
  let buffer = '';
  let done = false;
  let pending: Promise<void> | undefined;

  const parseBlock = (block: string) => {
    const fields: Record<string, string> = {};
    const data: string[] = [];
    let any = false;
    for (const line of block.split('\n')) {
      if (line === '') continue;
      if (line.startsWith(':')) {
        comments.push(line.slice(1).trim());
        continue;
      }
      const colon = line.indexOf(':');
      const name = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      any = true;
      if (name === 'data') data.push(value);
      else fields[name] = value;
    }
    if (!any) return;
    const text = data.join('\n');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const event: WireEvent = {
      event: fields.event ?? 'message',
      id: fields.id,
      data: text,
      retry: fields.retry !== undefined ? Number(fields.retry) : undefined,
      json,
    };
    queue.push(event);
    seen.push(event);
  };

  const pump = (): Promise<void> => {
    pending ??= (async () => {
      const { value, done: finished } = await reader.read();
      if (finished) done = true;
      else {
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let index = buffer.indexOf('\n\n');
        while (index !== -1) {
          parseBlock(buffer.slice(0, index));
          buffer = buffer.slice(index + 2);
          index = buffer.indexOf('\n\n');
        }
      }
    })().finally(() => {
      pending = undefined;
    });
    return pending;
  };

  const waitFor = async <T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value !== undefined) return value;
      if (done) throw new Error(`stream ended while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        pump(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  };

  const api: SseReader = {
    comments,
    seen,
    next: (timeoutMs = 10_000) => waitFor(() => queue.shift(), timeoutMs, 'an event'),
    async take(count, timeoutMs = 10_000) {
      const out: WireEvent[] = [];
      for (let i = 0; i < count; i++) out.push(await api.next(timeoutMs));
      return out;
    },
    async ended(timeoutMs = 10_000) {
      try {
        await waitFor(() => (done ? true : undefined), timeoutMs, 'the end of the stream');
        return true;
      } catch (error) {
        if (done) return true;
        if ((error as Error).message.startsWith('timed out')) return false;
        throw error;
      }
    },
    async cancel() {
      await reader.cancel().catch(() => {});
    },
  };
  return api;
}
