/**
 * A LanguageModelV3 backed by a child process (a local vendor CLI, or a child agent over ACP).
 * Such a model is an agent of its own: it receives the conversation as one prompt, runs its own
 * tools, and streams text back. svc's tool definitions are not forwarded (a warning says so).
 * @module
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
  SharedV3Warning,
} from '@ai-sdk/provider';
import type { Env } from './context';

export interface RunEvents {
  text(delta: string): void;
  usage(input?: number, output?: number): void;
}

export abstract class ProcessLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly supportedUrls = {};

  constructor(
    readonly provider: string,
    readonly modelId: string,
  ) {}

  protected abstract run(
    prompt: string,
    options: LanguageModelV3CallOptions,
    events: RunEvents,
  ): Promise<void>;

  private warnings(options: LanguageModelV3CallOptions): SharedV3Warning[] {
    return options.tools?.length
      ? [
          {
            type: 'unsupported',
            feature: 'tools',
            details: `${this.provider} runs its own tools; svc tools are not forwarded`,
          },
        ]
      : [];
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    let text = '';
    const usage = { input: undefined as number | undefined, output: undefined as number | undefined };
    await this.run(renderPrompt(options.prompt), options, {
      text: (delta) => {
        text += delta;
      },
      usage: (input, output) => {
        usage.input = input;
        usage.output = output;
      },
    });
    return {
      content: text ? [{ type: 'text', text }] : [],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: toUsage(usage.input, usage.output),
      warnings: this.warnings(options),
    };
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const warnings = this.warnings(options);
    const prompt = renderPrompt(options.prompt);
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start: (controller) => {
        controller.enqueue({ type: 'stream-start', warnings });
        controller.enqueue({ type: 'text-start', id: 't0' });
        const usage = { input: undefined as number | undefined, output: undefined as number | undefined };
        this.run(prompt, options, {
          text: (delta) => {
            if (delta) controller.enqueue({ type: 'text-delta', id: 't0', delta });
          },
          usage: (input, output) => {
            usage.input = input;
            usage.output = output;
          },
        }).then(
          () => {
            controller.enqueue({ type: 'text-end', id: 't0' });
            controller.enqueue({
              type: 'finish',
              usage: toUsage(usage.input, usage.output),
              finishReason: { unified: 'stop', raw: 'stop' },
            });
            controller.close();
          },
          (error) => {
            controller.enqueue({ type: 'error', error });
            controller.close();
          },
        );
      },
    });
    return { stream };
  }
}

export function toUsage(input?: number, output?: number): LanguageModelV3Usage {
  return {
    inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: undefined, reasoning: undefined },
  };
}

/** The conversation as one prompt: system text first, then the turns in order. */
export function renderPrompt(prompt: LanguageModelV3Prompt): string {
  const system: string[] = [];
  const turns: string[] = [];
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        system.push(message.content);
        break;
      case 'user':
        turns.push(
          `User: ${message.content
            .map((p) => (p.type === 'text' ? p.text : `[${p.mediaType} attachment omitted]`))
            .join('\n')}`,
        );
        break;
      case 'assistant':
        turns.push(
          `Assistant: ${message.content
            .map((p) =>
              p.type === 'text'
                ? p.text
                : p.type === 'tool-call'
                  ? `[called ${p.toolName} ${JSON.stringify(p.input)}]`
                  : p.type === 'reasoning'
                    ? ''
                    : '',
            )
            .filter(Boolean)
            .join('\n')}`,
        );
        break;
      case 'tool':
        turns.push(
          `Tool results: ${message.content
            .map((p) => (p.type === 'tool-result' ? `${p.toolName}: ${JSON.stringify(p.output)}` : ''))
            .join('\n')}`,
        );
        break;
      default:
        break;
    }
  }
  const lastUser = prompt.length === 1 && prompt[0].role === 'user';
  const body = lastUser ? turns[0].replace(/^User: /, '') : turns.join('\n\n');
  return system.length ? `${system.join('\n\n')}\n\n${body}` : body;
}

/** Resolve a command on the App's PATH (not process.env: tests isolate it). */
export function whichBinary(command: string, env: Env, cwd: string): string | undefined {
  const executable = (path: string) => {
    try {
      if (!existsSync(path) || !statSync(path).isFile()) return false;
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes('/') || isAbsolute(command)) {
    const path = resolve(cwd, command);
    return executable(path) ? path : undefined;
  }
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const path = join(dir, command);
    if (executable(path)) return path;
  }
  return undefined;
}
