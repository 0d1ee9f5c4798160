/**
 * One language server process: stdio JSON-RPC with Content-Length framing (lsp-limits.ts: one
 * breaking a limit is stopped; lsp-requests.ts: the requests and the watch for a hung server), the
 * initialize handshake, document sync, pulled or pushed diagnostics (a clean document of a server
 * that stays silent while a list stays empty is opened again: lsp-quirks.ts), and plain requests
 * (rename, references, definition) for the semantic edits.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { LspServerConfig } from '../config/schema';
import { SvcError } from '../errors';
import { initializeParams, LSP_TIMEOUTS } from './lsp-initialize';
import { evictOldest, FrameLimitError, keptDiagnostics, LspFrames } from './lsp-limits';
import { cannotStart, type LspQuirks, quirksOf } from './lsp-quirks';
import { LspRequests, type LspResponse } from './lsp-requests';

export { LSP_TIMEOUTS } from './lsp-initialize';

import { answer, type Diagnostic } from './lsp-diagnostic';
import { offersTsserver, type RawDiagnostic, tsserverLists } from './lsp-tsserver';

export type { Diagnostic } from './lsp-diagnostic';

const QUIET_MS = 300;

/** How long a stopping server has to exit before it is killed (and then to die). */
const STOP_GRACE_MS = 1_000;
/**
 * A request no server implements: its answer (an error) comes after everything the server sent
 * for the messages before it, so it marks where a close's publishes end (see `reopen`).
 */
const BARRIER_METHOD = 'svc/barrier';

export class LspClient {
  private readonly versions = new Map<string, number>();
  /** The text last sent for each document (didOpen or didChange). */
  private readonly texts = new Map<string, string>();
  /** Counts every document change sent; a publish records the count it came after. */
  private syncs = 0;
  private readonly published = new Map<
    string,
    { diagnostics: RawDiagnostic[]; dropped: number; at: number; afterSyncs: number }
  >();
  private readonly listeners = new Set<(uri: string) => void>();
  /**
   * Documents closed and opened again whose barrier the server has not answered yet: what it
   * publishes for them meanwhile is about the closed document (an empty list), not the new text.
   */
  private readonly reopening = new Set<string>();
  private readonly frames = new LspFrames();
  /** Why svc stopped the server (it broke a limit, it stopped answering): what its requests get. */
  private failedWith: SvcError | undefined;
  /** Requests sent and their answers; one not answered within LSP_TIMEOUTS.stallMs stops the server. */
  private readonly requests: LspRequests;
  private capabilities: Record<string, unknown> = {};
  private exitedFlag = false;
  /** The server once failed to pass diagnostics requests on to tsserver: it is not asked again. */
  private tsserverFailed = false;
  private stderr = '';
  /** Called once when the process exits (a crash or a stop). */
  onExit?: () => void;

  private constructor(
    readonly id: string,
    private readonly child: ChildProcess,
    private readonly quirks: LspQuirks,
  ) {
    this.requests = new LspRequests(id, {
      send: (message) => this.send(message),
      cancels: () => !this.stopping && !this.exitedFlag && !this.failedWith,
      stalled: (why) => {
        if (!this.exitedFlag) this.fail(why);
      },
    });
    child.stdout?.on('data', (chunk: Buffer) => this.onData(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      if (this.stderr.length < 4000) this.stderr += chunk.toString();
    });
    child.on('exit', () => {
      this.exitedFlag = true;
      // What the server started and left in its group goes with it (tsserver's typings installer
      // runs npm with the user's HOME; it would go on writing after the run).
      this.signalGroup('SIGKILL');
      this.onExit?.();
      // Waiters for pushed diagnostics stop waiting: nothing more will come.
      for (const listener of this.listeners) listener('');
      this.requests.endAll(
        new SvcError(
          'unavailable',
          `language server ${id} exited${this.stderr ? `: ${this.stderr.trim().slice(0, 300)}` : ''}`,
        ),
      );
    });
  }

  static async start(
    id: string,
    server: LspServerConfig,
    root: string,
    env: Readonly<Record<string, string | undefined>>,
    quirks: LspQuirks = quirksOf(server),
    prefix?: readonly string[], // the command sandbox's wrapper, `[bwrap, …args, '--']`
    signal?: AbortSignal, // aborted: a start still waiting for `initialize` is killed (the app closes)
  ): Promise<LspClient> {
    const argv = prefix?.length
      ? [...prefix, server.command, ...server.args]
      : [server.command, ...server.args];
    const child = spawn(argv[0], argv.slice(1), {
      cwd: root,
      // SHLVL: a bash (a wrapper script) with the socket stdin and none would source ~/.bashrc,
      // whose output would be read as the protocol's (src/mcp-client/transport.ts, alike).
      env: { SHLVL: '1', ...env, ...server.env } as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: stopping it reaches everything it started.
      detached: true,
    });
    const started = await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      child.once('spawn', () => resolve(true));
    });
    if (!started) {
      throw cannotStart(id, server.command);
    }
    const client = new LspClient(id, child, quirks);
    const abandon = () => {
      client.stopping = true;
      client.signalGroup('SIGKILL');
    };
    signal?.addEventListener('abort', abandon, { once: true });
    if (signal?.aborted) abandon();
    try {
      const params = initializeParams(root, server, Boolean(prefix?.length));
      const init = (await client.request('initialize', params, LSP_TIMEOUTS.startMs)) as {
        capabilities?: Record<string, unknown>;
      };
      client.capabilities = init?.capabilities ?? {};
    } catch (error) {
      // A server that never answers is not left running: its start failed.
      abandon();
      throw error;
    } finally {
      signal?.removeEventListener('abort', abandon);
    }
    client.notify('initialized', {});
    return client;
  }

  /** Why svc stopped the server (it broke a limit, it stopped answering), if it did. */
  get failure(): SvcError | undefined {
    return this.failedWith;
  }

  /** The process has exited (crashed or stopped). */
  get exited(): boolean {
    return this.exitedFlag;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** What the server said it can do in its initialize answer. */
  can(capability: string): boolean {
    return Boolean(this.capabilities[capability]);
  }

  /** Send the file's current text: didOpen the first time, didChange after. */
  sync(uri: string, languageId: string, text: string): void {
    const version = (this.versions.get(uri) ?? 0) + 1;
    this.versions.set(uri, version);
    this.texts.set(uri, text);
    this.syncs++;
    if (version === 1)
      this.notify('textDocument/didOpen', { textDocument: { uri, languageId, version, text } });
    else
      this.notify('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
  }

  async diagnose(
    uri: string,
    languageId: string,
    text: string,
    options: { waitMs: number; signal?: AbortSignal },
  ): Promise<{ diagnostics: Diagnostic[]; complete: boolean; dropped?: number }> {
    if (this.asksTsserver()) {
      const asked = await this.askTsserver(uri, languageId, text, options);
      if (asked) return asked;
    }
    // A push server that published after the last change of this very text has answered it:
    // nothing is sent, only its quiet period is waited for.
    const answered = this.answeredAt(uri, text);
    const sentAt = answered ?? Date.now();
    if (answered === undefined) {
      if (this.reopenWhenClean(uri)) this.reopen(uri, languageId, text);
      else this.sync(uri, languageId, text);
    }

    if (this.capabilities.diagnosticProvider) {
      try {
        const report = (await this.request(
          'textDocument/diagnostic',
          { textDocument: { uri } },
          options.waitMs,
          options.signal,
        )) as {
          items?: RawDiagnostic[];
        };
        return answer(keptDiagnostics(report?.items), true);
      } catch (error) {
        if (options.signal?.aborted) throw new SvcError('cancelled', 'diagnostics was cancelled');
        if (!SvcError.is(error) || error.code !== 'timeout') throw error;
        return { diagnostics: [], complete: false };
      }
    }
    // Push model: wait for a publish after our change, then for a quiet period.
    const complete = await new Promise<boolean>((resolve) => {
      let quiet: NodeJS.Timeout | undefined;
      const finish = (value: boolean) => {
        clearTimeout(deadline);
        if (quiet) clearTimeout(quiet);
        this.listeners.delete(listener);
        options.signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const listener = (published: string) => {
        if (this.exitedFlag || this.failure) return finish(false);
        if (published !== uri) return;
        if (quiet) clearTimeout(quiet);
        quiet = setTimeout(() => finish(true), QUIET_MS);
      };
      const deadline = setTimeout(() => finish((this.published.get(uri)?.at ?? 0) >= sentAt), options.waitMs);
      const onAbort = () => finish(false);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.listeners.add(listener);
      if (answered !== undefined)
        quiet = setTimeout(() => finish(true), Math.max(0, answered + QUIET_MS - Date.now()));
    });
    if (options.signal?.aborted) throw new SvcError('cancelled', 'diagnostics was cancelled');
    if (this.failure) throw this.failure;
    if (this.exitedFlag && !complete) {
      throw new SvcError('unavailable', `language server ${this.id} exited before it reported diagnostics`);
    }
    return answer(this.published.get(uri) ?? { diagnostics: [], dropped: 0 }, complete);
  }

  /**
   * Diagnostics are asked of tsserver: the server passes requests on to it (typescript-language-server
   * says so at initialize) and has not failed to.
   */
  asksTsserver(): boolean {
    return !this.tsserverFailed && !this.exitedFlag && offersTsserver(this.capabilities);
  }

  /**
   * typescript-language-server pushes a file's diagnostics in stages (syntactic, then semantic, then
   * suggestions, each published 50 ms after its stage) and signals nothing when the last is done,
   * so a wait for a quiet period after a publish can end between the empty syntactic list and the
   * semantic one: on a loaded machine the type check takes seconds, and the answer said "no
   * errors" for a file with one. tsserver answers the same three lists on request, after the text
   * just sent (it handles requests in order): they are asked for, and nothing is waited out.
   * undefined when the server could not answer them (the push path answers instead).
   */
  private async askTsserver(
    uri: string,
    languageId: string,
    text: string,
    options: { waitMs: number; signal?: AbortSignal },
  ): Promise<{ diagnostics: Diagnostic[]; complete: boolean; dropped?: number } | undefined> {
    if (this.texts.get(uri) !== text) this.sync(uri, languageId, text);
    let lists: RawDiagnostic[] | undefined;
    try {
      lists = await tsserverLists(
        (method, params) => this.request(method, params, options.waitMs, options.signal),
        uri,
      );
    } catch (error) {
      if (options.signal?.aborted) throw new SvcError('cancelled', 'diagnostics was cancelled');
      if (SvcError.is(error) && error.code === 'timeout') return { diagnostics: [], complete: false };
      if (this.exitedFlag) throw error;
      lists = undefined;
    }
    if (options.signal?.aborted) throw new SvcError('cancelled', 'diagnostics was cancelled');
    if (!lists) {
      this.tsserverFailed = true;
      return undefined;
    }
    return answer(keptDiagnostics(lists), true);
  }

  /**
   * When a push server last published for `uri`, if that publish still holds: the text is the one
   * last sent and no document changed since. A server need not publish again for a change that
   * leaves a file's list as it was (typescript-language-server stays silent while an empty list
   * stays empty), so sending the same text again and waiting for a publish would wait out the
   * whole wait and answer "incomplete".
   */
  private answeredAt(uri: string, text: string): number | undefined {
    if (this.exitedFlag || this.capabilities.diagnosticProvider || this.texts.get(uri) !== text)
      return undefined;
    const last = this.published.get(uri);
    return last && last.afterSyncs === this.syncs ? last.at : undefined;
  }

  /**
   * The server would stay silent if this document's new text left its empty list empty (see
   * lsp-quirks.ts): it is opened again instead of changed.
   */
  private reopenWhenClean(uri: string): boolean {
    return (
      this.quirks.reopenWhenClean &&
      !this.exitedFlag &&
      !this.capabilities.diagnosticProvider &&
      this.versions.has(uri) &&
      !this.reopening.has(uri) &&
      this.published.get(uri)?.diagnostics.length === 0
    );
  }

  /**
   * didClose, a barrier request, then didOpen with the new text: the server publishes each list of
   * the opened document, empty ones included. It also publishes an empty list when it closes the
   * document, before it has checked anything; that one, and anything else it sends before it
   * answers the barrier, is ignored (`dispatch`), so only a publish about the new text answers.
   */
  private reopen(uri: string, languageId: string, text: string): void {
    this.notify('textDocument/didClose', { textDocument: { uri } });
    this.reopening.add(uri);
    // Settled as its answer is read (an exit rejects it), before the frames that follow it.
    this.requests.barrier(BARRIER_METHOD, () => this.reopening.delete(uri));
    this.versions.delete(uri);
    this.sync(uri, languageId, text);
  }

  /** Set by stop(): the exit that follows is not a crash. */
  stopping = false;

  /**
   * Ask the server to shut down and exit; one that has not exited a second later is killed with
   * its process group. Resolves once it has exited (its group killed with it: see the constructor).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.exitedFlag) return;
    try {
      await this.request('shutdown', null, 2000);
      this.notify('exit', null);
    } catch {
      // a server that does not answer shutdown is killed below
    }
    if (await this.exitWithin(STOP_GRACE_MS)) return;
    this.signalGroup('SIGKILL');
    await this.exitWithin(STOP_GRACE_MS);
  }

  private exitWithin(ms: number): Promise<boolean> {
    if (this.exitedFlag) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.child.off('exit', onExit);
        resolve(false);
      }, ms);
      const onExit = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.child.once('exit', onExit);
    });
  }

  private signalGroup(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // the group is gone already
    }
  }

  /**
   * A request, answered within `timeoutMs` or failed with a `timeout` error; `signal` aborted, it
   * fails `cancelled`. Given up on either way, the server is told (`$/cancelRequest`).
   */
  request(method: string, params: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.exitedFlag)
      return Promise.reject(new SvcError('unavailable', `language server ${this.id} is not running`));
    return this.requests.request(method, params, timeoutMs, signal);
  }

  notify(method: string, params: unknown): void {
    if (!this.exitedFlag) this.send({ jsonrpc: '2.0', method, params });
  }

  private send(message: unknown): void {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    this.child.stdin?.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  private onData(chunk: Buffer): void {
    if (this.failure) return;
    let messages: unknown[];
    try {
      messages = this.frames.push(chunk);
    } catch (error) {
      if (!(error instanceof FrameLimitError)) throw error;
      this.fail(error.message);
      return;
    }
    for (const message of messages) this.dispatch(message as Parameters<LspClient['dispatch']>[0]);
  }

  /** The server broke a limit (`why`): everything waiting on it gets that error, and it is killed. */
  private fail(why: string): void {
    const error = new SvcError('unavailable', `language server ${this.id} ${why}; svc stopped it`);
    this.failedWith = error;
    this.requests.endAll(error);
    for (const listener of this.listeners) listener('');
    this.signalGroup('SIGKILL');
  }

  private dispatch(message: Partial<LspResponse> & { method?: string; params?: any }): void {
    if (message.method && message.id !== undefined) {
      // Requests from the server: answer the usual ones so it does not wait on us.
      const result =
        message.method === 'workspace/configuration'
          ? (message.params?.items ?? []).map(() => null)
          : message.method === 'workspace/workspaceFolders'
            ? []
            : null;
      this.send({ jsonrpc: '2.0', id: message.id, result });
      return;
    }
    if (message.method === 'textDocument/publishDiagnostics') {
      const uri = message.params?.uri as string;
      if (this.reopening.has(uri)) return;
      const kept = keptDiagnostics(message.params?.diagnostics);
      this.published.delete(uri); // re-inserted last: the map stays in publish order
      this.published.set(uri, { ...kept, at: Date.now(), afterSyncs: this.syncs });
      evictOldest(this.published, uri);
      for (const listener of this.listeners) listener(uri);
      return;
    }
    if (message.id !== undefined) this.requests.answer(message as LspResponse);
  }
}
