/**
 * The requests svc sends one language server (JSON-RPC): their ids, the callers waiting for an
 * answer (each at most its own wait, or until its call is aborted), and the watch that finds the
 * server hung: a request it has not answered within LSP_TIMEOUTS.stallMs, whether or not its
 * caller still waits. typescript-language-server whose tsserver ran out of memory stays up and
 * answers nothing more; svc's calls each waited out their wait, for as long as svc ran.
 *
 * A request its caller gives up on (its wait passed, its call was aborted) is cancelled: the
 * server gets `$/cancelRequest` and can stop computing an answer nobody reads (svc used to just
 * stop waiting, and tsserver went on burning a core for seconds on a big repository). The server
 * still answers it (LSP: a cancelled request is answered, with its result or the error
 * RequestCancelled, -32800); that answer is dropped, and it shows the server alive: the request
 * stays watched until then.
 * @module
 */
import { SvcError } from '../errors';
import { LSP_TIMEOUTS } from './lsp-initialize';

/** A server's answer to one of svc's requests. */
export interface LspResponse {
  id: number;
  result?: unknown;
  error?: { code?: number; message: string };
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class LspRequests {
  private nextId = 1;
  /** Callers waiting for an answer. */
  private readonly pending = new Map<number, Waiter>();
  /** Requests the server has not answered yet, each with its stall timer. */
  private readonly unanswered = new Map<number, NodeJS.Timeout>();

  constructor(
    /** The server's id, for the messages. */
    private readonly server: string,
    private readonly io: {
      send(message: unknown): void;
      /**
       * A request given up on is cancelled: false while the server is stopped or killed (it dies
       * anyway, and a stopping one may be past reading).
       */
      cancels(): boolean;
      /** The server answered a request not within LSP_TIMEOUTS.stallMs (`why`). */
      stalled(why: string): void;
    },
  ) {}

  /**
   * Send a request; its caller waits `timeoutMs` at most for the answer, and no longer than
   * `signal` stays unaborted. Given up on either way, the request is cancelled.
   */
  request(method: string, params: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const cancelled = () =>
      new SvcError('cancelled', `the ${method} request to language server ${this.server} was cancelled`, {
        cause: signal?.reason,
      });
    if (signal?.aborted) return Promise.reject(cancelled());
    const id = this.nextId++;
    this.io.send({ jsonrpc: '2.0', id, method, params });
    // A start that gets no answer fails after its own time (LSP_TIMEOUTS.startMs), and is killed.
    if (method !== 'initialize') this.watch(id, method);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (error: SvcError) => {
        done();
        this.pending.delete(id);
        this.cancel(id, method);
        reject(error);
      };
      const timer = setTimeout(
        () =>
          giveUp(
            new SvcError(
              'timeout',
              `language server ${this.server} did not answer ${method} within ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
      const onAbort = () => giveUp(cancelled());
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (v) => {
          done();
          resolve(v);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
    });
  }

  /**
   * Tell the server to stop working on a request nobody waits for now. Not `initialize` (a start
   * that is not answered is killed; nothing but `exit` may come before its answer).
   */
  private cancel(id: number, method: string): void {
    if (method === 'initialize' || !this.io.cancels()) return;
    this.io.send({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id } });
  }

  /** Send a request nobody waits on: `settle` runs as its answer is read (or the server ends). */
  barrier(method: string, settle: () => void): void {
    const id = this.nextId++;
    this.pending.set(id, { resolve: settle, reject: settle });
    this.io.send({ jsonrpc: '2.0', id, method, params: null });
    this.watch(id, method);
  }

  /**
   * An answer from the server: the server is alive; its caller, if it still waits, gets it. The
   * answer to a request given up on (a late result, or RequestCancelled) is dropped.
   */
  answer(message: LspResponse): void {
    clearTimeout(this.unanswered.get(message.id));
    this.unanswered.delete(message.id);
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    if (message.error)
      pending.reject(new SvcError('unavailable', `language server ${this.server}: ${message.error.message}`));
    else pending.resolve(message.result);
  }

  /** The server is gone (it exited, svc stopped it): every caller gets `error`, nothing is watched. */
  endAll(error: Error): void {
    for (const timer of this.unanswered.values()) clearTimeout(timer);
    this.unanswered.clear();
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  /** A request sent: a server that has not answered it within LSP_TIMEOUTS.stallMs is hung. */
  private watch(id: number, method: string): void {
    const ms = LSP_TIMEOUTS.stallMs;
    const timer = setTimeout(() => {
      if (this.unanswered.delete(id))
        this.io.stalled(`stopped answering (no answer to ${method} within ${ms / 1000} s)`);
    }, ms);
    this.unanswered.set(id, timer.unref());
  }
}
