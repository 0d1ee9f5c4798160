/**
 * Local vendor CLI providers (Claude Code, Codex CLI, Gemini CLI). svc launches the vendor binary
 * per turn; the binary uses its own login, so svc stores nothing and never reads its tokens.
 * `svc auth <cli-kind>` only checks that the CLI is installed and logged in: through the vendor's
 * own status command where there is one, otherwise by whether its login file exists (a stat, the
 * file is not opened) or its documented env var is set.
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { SvcError } from '../errors';
import { type Env, expandHome, firstEnv } from './context';
import { ProcessLanguageModel, type RunEvents, whichBinary } from './process-model';

export type CliKind = 'claude' | 'codex' | 'gemini';

interface CliKindSpec {
  name: string;
  binary: string;
  provider: string;
  /** The vendor's own login check (exit 0 = logged in). */
  status?: string[];
  /** Files whose presence means a login exists (checked with a stat only). */
  login_markers: string[];
  login_env: string[];
  login_hint: string;
  args: (model: string) => string[];
  output: 'claude-stream-json' | 'codex-jsonl' | 'gemini-json';
}

export const CLI_KINDS: Record<CliKind, CliKindSpec> = {
  claude: {
    name: 'Claude Code',
    binary: 'claude',
    provider: 'claude-code',
    login_markers: ['~/.claude/.credentials.json'],
    login_env: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'],
    login_hint: 'run `claude` and use /login (or `claude setup-token`)',
    args: (model) => ['-p', '--output-format', 'stream-json', '--verbose', '--model', model],
    output: 'claude-stream-json',
  },
  codex: {
    name: 'Codex CLI',
    binary: 'codex',
    provider: 'codex-cli',
    status: ['login', 'status'],
    login_markers: [],
    login_env: [],
    login_hint: 'run `codex login`',
    args: (model) => ['exec', '--json', '--skip-git-repo-check', '--model', model, '-'],
    output: 'codex-jsonl',
  },
  gemini: {
    name: 'Gemini CLI',
    binary: 'gemini',
    provider: 'gemini-cli',
    login_markers: ['~/.gemini/oauth_creds.json'],
    login_env: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENAI_USE_VERTEXAI'],
    login_hint: 'run `gemini` once and pick a sign-in method (or set GEMINI_API_KEY)',
    args: (model) => ['--model', model, '--output-format', 'json'],
    output: 'gemini-json',
  },
};

export function isCliKind(value: string): value is CliKind {
  return value in CLI_KINDS;
}

export interface CliSetupCheck {
  platform: CliKind;
  name: string;
  provider: string;
  command: string;
  installed: boolean;
  path: string | null;
  version: string | null;
  logged_in: boolean | null;
  login_check: string;
  next_step: string | null;
  /** The check stores nothing and never reads the vendor's token files. */
  stores_credentials: false;
}

export function cliCommand(
  kind: CliKind,
  auth: Record<string, Record<string, string>>,
  override?: string,
): string {
  return override ?? auth[kind]?.command ?? CLI_KINDS[kind].binary;
}

export async function checkVendorCli(options: {
  kind: CliKind;
  command: string;
  env: Env;
  cwd: string;
  signal?: AbortSignal;
}): Promise<CliSetupCheck> {
  const spec = CLI_KINDS[options.kind];
  const path = whichBinary(options.command, options.env, options.cwd) ?? null;
  const base = {
    platform: options.kind,
    name: spec.name,
    provider: spec.provider,
    command: options.command,
    stores_credentials: false as const,
  };
  if (!path) {
    return {
      ...base,
      installed: false,
      path: null,
      version: null,
      logged_in: null,
      login_check: 'not checked: the CLI is not installed',
      next_step: `install ${spec.name} so that \`${options.command}\` is on PATH, then ${spec.login_hint}`,
    };
  }
  const version = await runQuick(path, ['--version'], options);
  let loggedIn: boolean | null = null;
  let check: string;
  if (spec.status) {
    const status = await runQuick(path, spec.status, options);
    loggedIn = status.code === 0;
    check = `\`${options.command} ${spec.status.join(' ')}\` exited ${status.code ?? 'without a code'}`;
  } else {
    const marker = spec.login_markers.map((m) => expandHome(m, options.env)).find((m) => existsSync(m));
    const env = firstEnv(options.env, spec.login_env);
    loggedIn = Boolean(marker || env);
    check = marker
      ? `login file ${marker} exists (not opened)`
      : env
        ? `env ${env.name} is set`
        : `no login file (${spec.login_markers.join(', ')}) and none of ${spec.login_env.join(', ')} set`;
  }
  return {
    ...base,
    installed: true,
    path,
    version: version.code === 0 ? (version.stdout.trim().split('\n')[0] ?? null) : null,
    logged_in: loggedIn,
    login_check: check,
    next_step: loggedIn ? null : spec.login_hint,
  };
}

function runQuick(
  path: string,
  args: string[],
  options: { env: Env; cwd: string; signal?: AbortSignal },
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    const child = spawn(path, args, {
      cwd: options.cwd,
      env: options.env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
      signal: options.signal,
    });
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', () => resolve({ code: null, stdout }));
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

/** A turn through a vendor CLI: the prompt on stdin, the vendor's JSON output parsed as it streams. */
export class VendorCliLanguageModel extends ProcessLanguageModel {
  constructor(
    provider: string,
    modelId: string,
    private readonly launch: { kind: CliKind; path: string; args?: string[]; env: Env; cwd: string },
  ) {
    super(`${provider}.vendor-cli`, modelId);
  }

  protected run(prompt: string, options: LanguageModelV3CallOptions, events: RunEvents): Promise<void> {
    const spec = CLI_KINDS[this.launch.kind];
    const args = [...(this.launch.args ?? []), ...spec.args(this.modelId)];
    return new Promise((resolve, reject) => {
      const child = spawn(this.launch.path, args, {
        cwd: this.launch.cwd,
        env: this.launch.env as NodeJS.ProcessEnv,
        stdio: ['pipe', 'pipe', 'pipe'],
        signal: options.abortSignal,
      });
      let buffer = '';
      let whole = '';
      let stderr = '';
      let failure: string | undefined;
      const line = (text: string) => {
        const parsed = parseLine(spec.output, text);
        if (parsed.text) events.text(parsed.text);
        if (parsed.usage) events.usage(parsed.usage.input, parsed.usage.output);
        if (parsed.error) failure = parsed.error;
      };
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        if (spec.output === 'gemini-json') {
          whole += chunk;
          return;
        }
        buffer += chunk;
        let nl = buffer.indexOf('\n');
        while (nl >= 0) {
          line(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
          nl = buffer.indexOf('\n');
        }
      });
      child.stderr.on('data', (d) => {
        if (stderr.length < 4000) stderr += d;
      });
      child.on('error', (error) =>
        reject(
          new SvcError('unavailable', `${spec.name}: cannot launch ${this.launch.path} (${error.message})`),
        ),
      );
      child.on('close', (code) => {
        if (buffer.trim()) line(buffer);
        if (spec.output === 'gemini-json') {
          const parsed = parseGemini(whole);
          if (parsed.text) events.text(parsed.text);
          if (parsed.usage) events.usage(parsed.usage.input, parsed.usage.output);
          if (parsed.error) failure = parsed.error;
        }
        if (failure || code !== 0) {
          const reason = failure ?? (stderr.trim().split('\n').pop() || `exited ${code}`);
          const login = /log ?in|auth|credential|unauthori[sz]ed|401/i.test(reason);
          reject(
            new SvcError(
              login ? 'unauthorized' : 'unavailable',
              `${spec.name}: ${reason}${login ? `; ${spec.login_hint} (check with svc auth ${this.launch.kind})` : ''}`,
            ),
          );
          return;
        }
        resolve();
      });
      child.stdin.on('error', () => {});
      child.stdin.end(prompt);
    });
  }
}

interface Parsed {
  text?: string;
  usage?: { input?: number; output?: number };
  error?: string;
}

function parseLine(format: CliKindSpec['output'], text: string): Parsed {
  let event: Record<string, any>;
  try {
    event = JSON.parse(text);
  } catch {
    return {};
  }
  if (format === 'claude-stream-json') {
    if (event.type === 'assistant') {
      const parts = (event.message?.content ?? []) as { type: string; text?: string }[];
      return {
        text: parts
          .filter((p) => p.type === 'text')
          .map((p) => p.text ?? '')
          .join(''),
      };
    }
    if (event.type === 'result') {
      return {
        usage: { input: event.usage?.input_tokens, output: event.usage?.output_tokens },
        error: event.is_error ? String(event.result ?? event.subtype ?? 'error') : undefined,
      };
    }
    return {};
  }
  if (event.type === 'item.completed' && event.item?.type === 'agent_message')
    return { text: String(event.item.text ?? '') };
  if (event.type === 'turn.completed')
    return { usage: { input: event.usage?.input_tokens, output: event.usage?.output_tokens } };
  if (event.type === 'turn.failed') return { error: String(event.error?.message ?? 'turn failed') };
  if (event.type === 'error') return { error: String(event.message ?? 'error') };
  return {};
}

function parseGemini(text: string): Parsed {
  const trimmed = text.trim();
  if (!trimmed) return {};
  try {
    const value = JSON.parse(trimmed) as { response?: string; error?: { message?: string }; stats?: any };
    const tokens = value.stats?.models
      ? Object.values(value.stats.models as Record<string, any>)[0]?.tokens
      : undefined;
    return {
      text: value.response,
      error: value.error ? String(value.error.message ?? 'error') : undefined,
      usage: tokens ? { input: tokens.prompt, output: tokens.candidates } : undefined,
    };
  } catch {
    return { text: trimmed };
  }
}
