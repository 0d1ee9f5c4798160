/**
 * Child-agent providers over the Agent Client Protocol (JSON-RPC 2.0, one message per line on
 * stdio). svc owns only the selector, readiness and launch posture: per turn it launches the
 * configured binary, `initialize`s, opens a session in the workspace, sends `session/prompt`, and
 * streams `agent_message_chunk` updates as text. The child's credentials are its own. Permission
 * requests from the child are declined (svc cannot show them to the operator from inside a model
 * call); file-system and terminal capabilities are not offered.
 * @module
 */
import { spawn } from 'node:child_process';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import type { Env } from './context';
import { ProcessLanguageModel, type RunEvents } from './process-model';

export const ACP_PROTOCOL_VERSION = 1;

interface Pending {
  resolve(value: any): void;
  reject(error: unknown): void;
}

export class AcpLanguageModel extends ProcessLanguageModel {
  constructor(
    provider: string,
    modelId: string,
    private readonly launch: { path: string; args: string[]; env: Env; cwd: string; timeoutMs?: number },
  ) {
    super(`${provider}.acp`, modelId);
  }

  protected run(prompt: string, options: LanguageModelV3CallOptions, events: RunEvents): Promise<void> {
    const name = this.provider.replace(/\.acp$/, '');
    return new Promise((resolve, reject) => {
      const child = spawn(this.launch.path, this.launch.args, {
        cwd: this.launch.cwd,
        env: this.launch.env as NodeJS.ProcessEnv,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const pending = new Map<number, Pending>();
      let nextId = 1;
      let buffer = '';
      let stderr = '';
      let sessionId: string | undefined;
      let finished = false;
      const finish = (error?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        options.abortSignal?.removeEventListener('abort', onAbort);
        for (const p of pending.values()) p.reject(error ?? new Error('closed'));
        child.stdin.end();
        child.kill();
        if (error) reject(error);
        else resolve();
      };
      const send = (message: Record<string, unknown>) => {
        if (!child.stdin.destroyed) child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
      };
      const request = (method: string, params: unknown) =>
        new Promise<any>((res, rej) => {
          const id = nextId++;
          pending.set(id, { resolve: res, reject: rej });
          send({ id, method, params });
        });
      const onAbort = () => {
        if (sessionId) send({ method: 'session/cancel', params: { sessionId } });
        finish(new SvcError('cancelled', `${name}: the turn was cancelled`));
      };
      options.abortSignal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(
        () =>
          finish(
            new SvcError(
              'timeout',
              `${name}: the child agent did not finish within ${this.launch.timeoutMs ?? 600_000} ms`,
            ),
          ),
        this.launch.timeoutMs ?? 600_000,
      );

      const onMessage = (message: Record<string, any>) => {
        if (
          message.id !== undefined &&
          (message.result !== undefined || message.error !== undefined) &&
          !message.method
        ) {
          const p = pending.get(Number(message.id));
          if (!p) return;
          pending.delete(Number(message.id));
          if (message.error)
            p.reject(new SvcError('unavailable', `${name}: ${message.error.message ?? 'error'}`));
          else p.resolve(message.result);
          return;
        }
        if (message.method === 'session/update') {
          const update = message.params?.update;
          if (update?.sessionUpdate === 'agent_message_chunk' && update.content?.type === 'text')
            events.text(String(update.content.text ?? ''));
          return;
        }
        if (message.method === 'session/request_permission' && message.id !== undefined) {
          const reject = (message.params?.options ?? []).find(
            (o: { kind?: string }) => o.kind === 'reject_once',
          );
          send({
            id: message.id,
            result: {
              outcome: reject ? { outcome: 'selected', optionId: reject.optionId } : { outcome: 'cancelled' },
            },
          });
          return;
        }
        if (message.method && message.id !== undefined) {
          send({ id: message.id, error: { code: -32601, message: `svc does not offer ${message.method}` } });
        }
      };

      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        buffer += chunk;
        let nl = buffer.indexOf('\n');
        while (nl >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          nl = buffer.indexOf('\n');
          if (!line) continue;
          try {
            onMessage(JSON.parse(line));
          } catch {
            // Not JSON-RPC (a stray log line): ignore.
          }
        }
      });
      child.stderr.on('data', (d) => {
        if (stderr.length < 4000) stderr += d;
      });
      child.on('error', (error) =>
        finish(new SvcError('unavailable', `${name}: cannot launch ${this.launch.path} (${error.message})`)),
      );
      child.on('close', (code) => {
        if (!finished)
          finish(
            new SvcError(
              'unavailable',
              `${name}: the child agent exited (${code}) before the turn ended${stderr.trim() ? `: ${stderr.trim().split('\n').pop()}` : ''}`,
            ),
          );
      });
      child.stdin.on('error', () => {});

      (async () => {
        const init = await request('initialize', {
          protocolVersion: ACP_PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        });
        if (typeof init?.protocolVersion === 'number' && init.protocolVersion !== ACP_PROTOCOL_VERSION)
          throw new SvcError(
            'unavailable',
            `${name}: the child agent speaks ACP version ${init.protocolVersion}, svc speaks ${ACP_PROTOCOL_VERSION}`,
          );
        const session = await request('session/new', { cwd: this.launch.cwd, mcpServers: [] });
        sessionId = String(session?.sessionId ?? '');
        if (!sessionId) throw new SvcError('unavailable', `${name}: session/new returned no sessionId`);
        if (this.modelId !== 'default') {
          await request('session/set_model', { sessionId, modelId: this.modelId }).catch(() => {});
        }
        const result = await request('session/prompt', {
          sessionId,
          prompt: [{ type: 'text', text: prompt }],
        });
        if (result?.stopReason === 'refusal')
          throw new SvcError('unavailable', `${name}: the child agent refused the prompt`);
        finish();
      })().catch((error) => finish(error));
    });
  }
}
