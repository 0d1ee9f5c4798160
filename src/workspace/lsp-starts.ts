/**
 * Starting language servers: one start per server at a time, shared by its callers, and what
 * happens after a crash or a failed start. The first MAX_RESTARTS are started again on the next
 * use; past them the server backs off: no start until a back-off has passed (LSP_BACKOFF: 5 s,
 * doubled at each failure after, up to 2 min), then the next use tries one start. A server that
 * always crashes is so started at most once per back-off, never in a loop; one that ran for
 * `healthyMs` before it crashed starts counting afresh. (svc used to give up for good after
 * MAX_RESTARTS: the LSP tools stayed gone until svc restarted, a fixed program or config included.)
 * @module
 */
import { SvcError } from '../errors';
import type { ResolvedServer } from './lsp-catalog';
import type { LspClient } from './lsp-client';

/** Crashes and failed starts in a row that are started again at once; past them, back-off. */
export const MAX_RESTARTS = 3;

/** The back-off after the restarts (mutable for tests only, as LSP_TIMEOUTS). */
export const LSP_BACKOFF = { firstMs: 5_000, maxMs: 120_000, healthyMs: 120_000 };

/** The wait before the `round`th start after the restarts (1-based): doubled each time, capped. */
export function backoffMs(round: number, settings = LSP_BACKOFF): number {
  return Math.min(settings.firstMs * 2 ** Math.max(0, round - 1), settings.maxMs);
}

/** What a client needs to be watched: whether it exited, whether svc stopped it, its exit hook. */
type Started = Pick<LspClient, 'exited' | 'stopping' | 'onExit' | 'failure'>;

interface ServerRecord {
  /** Crashes and failed starts since the last healthy run. */
  failures: number;
  lastError?: string;
  /** Set while the server backs off: why, and when it last failed (the back-off counts from then). */
  backoff?: { why: string; at: number };
  /** Back-offs since the last healthy run (the next one doubles). */
  rounds: number;
  /** What ran (program, arguments, environment, options): a changed entry starts afresh. */
  program: string;
}

const programOf = (server: ResolvedServer) =>
  JSON.stringify([server.command, server.args, server.env, server.initialization_options]);

export function createStarts<C extends Started>(options: {
  clients: Map<string, Promise<C>>;
  start: (server: ResolvedServer) => Promise<C>;
  now?: () => number;
}) {
  const { clients, start } = options;
  const now = options.now ?? Date.now;
  const records = new Map<string, ServerRecord>();
  /** Each server's last client that started: running while it has neither exited nor failed. */
  const up = new Map<string, C>();
  /** The server's record; a fresh one when what it runs changed (the user fixed its entry). */
  const record = (server: ResolvedServer) => {
    const program = programOf(server);
    const found = records.get(server.id);
    if (found?.program === program) return found;
    const fresh: ServerRecord = { failures: 0, rounds: 0, program };
    records.set(server.id, fresh);
    return fresh;
  };
  /** `upSince`: when the server that failed had started (undefined: its start failed). */
  const failed = (server: ResolvedServer, why: string, upSince?: number) => {
    const r = records.get(server.id);
    if (r?.program !== programOf(server)) return; // a server of an entry changed since
    if (upSince !== undefined && now() - upSince >= LSP_BACKOFF.healthyMs) {
      r.failures = 0;
      r.rounds = 0;
    }
    r.failures++;
    r.lastError = why;
    if (r.failures <= MAX_RESTARTS) return;
    r.rounds++;
    r.backoff = {
      why: `it crashed or failed to start ${r.failures} times (last: ${why.slice(0, 300)})`,
      at: now(),
    };
  };

  /** When a use may start the server again, while it backs off (read now: the settings may change). */
  const until = (r: ServerRecord | undefined) =>
    r?.backoff ? r.backoff.at + backoffMs(r.rounds) : undefined;

  const client = async (server: ResolvedServer): Promise<C> => {
    const { id } = server;
    let pending = clients.get(id);
    const current = pending ? await pending.catch(() => undefined) : undefined;
    if (current?.exited || current?.failure) {
      // It crashed, or svc stopped it (it stopped answering, it broke a limit), since the last
      // use: start it again (its exit, maybe still to come, counts as its failure).
      clients.delete(id);
      pending = undefined;
    }
    if (pending) return pending;
    const r = record(server);
    const retryAt = until(r);
    if (r.backoff && retryAt !== undefined && now() < retryAt)
      throw backingOff(server, r.backoff.why, retryAt, now());
    const starting = start(server);
    clients.set(id, starting);
    starting.then(
      (started) => {
        const upSince = now();
        up.set(id, started);
        delete record(server).backoff; // it is up: the status says so; its failures still count
        started.onExit = () => {
          if (started.stopping) return; // stopped by svc: idle, closing
          failed(server, started.failure?.message ?? 'it exited', upSince);
        };
      },
      (error: unknown) => {
        if (clients.get(id) === starting) clients.delete(id);
        failed(server, error instanceof Error ? error.message : String(error));
      },
    );
    return starting;
  };

  const status = (id: string) => {
    const r = records.get(id);
    const last = up.get(id);
    return {
      running: clients.has(id) && last !== undefined && !last.exited && !last.failure,
      restarts: r?.failures ?? 0,
      ...(r?.lastError ? { last_error: r.lastError } : {}),
      ...(r?.backoff ? { broken: r.backoff.why, retry_at: new Date(until(r) ?? 0).toISOString() } : {}),
    };
  };
  return { client, status };
}

/** The error of a use while the server backs off: when it is tried again, and what to fix. */
function backingOff(server: ResolvedServer, why: string, retryAt: number, at: number) {
  const seconds = Math.max(1, Math.ceil((retryAt - at) / 1000));
  const program = [server.command, ...server.args].join(' ').slice(0, 300);
  const where =
    server.source === 'config'
      ? `[lsp.${server.id}] command and args in svc.toml`
      : `built in; run another with an [lsp.${server.id}] entry in svc.toml, or turn built-ins off with options.lsp.auto = false${
          server.id === 'typescript' ? ' (out of memory: raise options.lsp.tsserver_memory_mb)' : ''
        }`;
  return new SvcError(
    'unavailable',
    `language server ${server.id} is not started again before ${new Date(retryAt).toISOString()} (in ${seconds} s): ${why}; it runs "${program}" (${where}): fix that (svc config show-lsp): a call after that time, or once its entry changed, starts it again`,
  );
}

/**
 * A start the caller waits for at most `ms` (undefined: the whole start), and no longer than its
 * `signal` (a cancelled tool call returns at once); the start goes on meanwhile, for later calls.
 */
export async function waitFor<C>(
  id: string,
  start: Promise<C>,
  ms: number | undefined,
  signal?: AbortSignal,
): Promise<C> {
  if (ms === undefined && !signal) return start;
  if (signal?.aborted) throw cancelledWhileStarting(id);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    if (ms !== undefined)
      timer = setTimeout(
        () =>
          reject(
            new SvcError(
              'timeout',
              `language server ${id} is still starting (no answer to initialize within the ${Math.round(ms / 100) / 10} s wait); later calls use it once it is up`,
            ),
          ),
        ms,
      );
    if (signal) {
      onAbort = () => reject(cancelledWhileStarting(id));
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([start, late]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

function cancelledWhileStarting(id: string): SvcError {
  return new SvcError(
    'cancelled',
    `the call was cancelled while language server ${id} was starting; it goes on starting for later calls`,
  );
}
