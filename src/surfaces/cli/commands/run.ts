/**
 * `svc run "<prompt>"`: the headless main job. Runs the agent in the workspace on one prompt
 * (from the arguments or stdin) through the session API (`app.agent`), streams the answer, and
 * exits 0 when the run completed, 1 when it failed (or was cancelled; a step or budget limit is a
 * failure), 2 on bad usage (including no model configured: the message says how to configure
 * one), 3 when it completed but a mutating call was refused (the change was not made).
 *
 * Output: `text` (the model's text as it streams; tool activity on stderr when it is a
 * terminal), `json` (one result object at the end), `stream-json` (one JSON event per line as it
 * happens, then a `result` line). Concurrent runs on one session are refused, never interleaved.
 * Permission prompts go to the terminal when stdin and stderr are one; otherwise they fail with a
 * clear message unless `--yolo` or `[permissions].allowed_tools` allows the tool.
 * @module
 */
import { Option } from 'commander';
import { gitSummary } from '../../../agent/environment';
import { REFUSAL_CODES } from '../../../agent/refused';
import type { RunResult } from '../../../agent/types';
import type { App } from '../../../app';
import { type FailureReport, SvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import { decisionForKey, permissionChoices, permissionLabel } from '../../../permissions/keys';
import { callTool } from '../../../tools/core/call-tool';
import { printable, safeTerminalText, visibleControls } from '../../../util/terminal-text';
import type { CliContext, CliIo, CliRegistrar } from '../context';
import { runEndLines, runExitCode, toolRefusedLine } from '../failure-lines';

interface RunOptions {
  output: 'text' | 'json' | 'stream-json';
  session?: string;
  continue?: boolean;
  model?: string;
  maxSteps?: string;
  yolo?: boolean;
  dangerouslySkipPermissions?: boolean;
  agent?: string;
  json?: boolean;
}

export const registerRun: CliRegistrar = (program, ctx) => {
  program
    .command('run')
    .description('Run the agent headless on a prompt (argument or stdin) and print its answer.')
    .argument('[prompt...]', 'the prompt; read from stdin when omitted')
    .addOption(
      new Option('--output <format>', 'text, json, or stream-json (one JSON event per line)')
        .choices(['text', 'json', 'stream-json'])
        .default('text'),
    )
    .option('--json', 'the same as --output json')
    .option('--session <id>', 'continue this session')
    .option('--continue', 'continue the current session (the last one svc run used or switch_session chose)')
    .option('--model <selector>', 'model for this run, <provider>/<model>')
    .option('--max-steps <n>', 'step limit for this run (default options.max_steps)')
    .option('--agent <id>', 'agent kind: build (default), plan, or one from [agents.<id>]')
    .option('--yolo', 'skip every permission prompt (unattended runs)')
    .option('--dangerously-skip-permissions', 'the same as --yolo')
    .action(async (words: string[], options: RunOptions) => {
      await runCommand(ctx, words, options);
    });
};

async function runCommand(ctx: CliContext, words: string[], flags: RunOptions) {
  const { io } = ctx;
  if (flags.json && flags.output !== 'text' && flags.output !== 'json') {
    throw new SvcError('invalid_input', `--json conflicts with --output ${flags.output}; drop one of them`);
  }
  const options: RunOptions = flags.json ? { ...flags, output: 'json' } : flags;
  const fromStdin = words.length === 0;
  const prompt = fromStdin ? await readStdin(io) : words.join(' ');
  if (!prompt.trim()) {
    throw new SvcError('invalid_input', 'no prompt; pass it as an argument (svc run "<prompt>") or on stdin');
  }
  const maxSteps = options.maxSteps === undefined ? undefined : Number(options.maxSteps);
  if (maxSteps !== undefined && (!Number.isInteger(maxSteps) || maxSteps < 1)) {
    throw new SvcError(
      'invalid_input',
      `--max-steps: expected a positive integer, got "${options.maxSteps}"`,
    );
  }
  if (options.session !== undefined && !options.session.trim()) {
    throw new SvcError('invalid_input', '--session: empty session id; see svc session list');
  }
  if (options.session && options.continue) {
    throw new SvcError('invalid_input', '--session and --continue: pass one of them');
  }
  const yolo = options.yolo === true || options.dangerouslySkipPermissions === true;
  const app = await ctx.app();
  warnUnknownKeys(app, io);

  let sessionId = options.session;
  if (options.continue) {
    sessionId = (await app.agent.currentSession()) ?? undefined;
    if (!sessionId)
      throw new SvcError('invalid_input', '--continue: there is no current session; omit it to start one');
  }
  const existing = sessionId ? await app.sessions.get(sessionId) : undefined;
  if (sessionId && !existing) {
    throw new SvcError('invalid_input', `--session: no session "${sessionId}"; see svc session list`);
  }
  const agentId = options.agent ?? existing?.agent ?? 'build';
  const kind = app.agent.kinds().find((k) => k.id === agentId);
  // Fail before anything is written when no model can be resolved: the message says how to configure one.
  try {
    await app.models.resolve({
      selector: options.model,
      sessionModel: existing?.model,
      agentModel: kind?.model ?? undefined,
      signal: io.signal,
    });
  } catch (error) {
    // An unknown provider or model, or a missing credential, is caught before the run starts: a
    // usage/config error (exit 2) like no provider at all, not a failed run.
    if (SvcError.is(error) && (error.code === 'not_found' || error.code === 'unauthorized')) {
      throw new SvcError('config_error', error.message, { details: error.details, cause: error });
    }
    throw error;
  }
  // The run's system prompt carries a git summary (two git processes): start it now, so git runs
  // while the session is set up; the prompt takes this one (it is kept a second). Not before the
  // model check: a run refused there does not wait for git.
  void gitSummary(app.workspace).catch(() => undefined);
  if (existing) {
    const state = await app.agent.state(existing.id);
    if (state.busy_elsewhere) throw busyElsewhere(existing.id, state.busy_elsewhere);
  }
  const session =
    existing ?? (await app.agent.createSession({ ...(options.agent ? { agent: options.agent } : {}) }));
  await app.agent.setCurrentSession(session.id);
  // issue 15: said once, when commands would run without the OS sandbox (auto mode, no bubblewrap).
  const notice = app.sandbox.notice();
  if (notice) io.stderr.write(`svc: ${notice}\n`);

  const output = createOutput(io, options.output, session.id);
  const unsubscribe = await app.agent.subscribe(session.id, output.onEvent, { family: true });
  const interactive = !yolo && !fromStdin && io.stdin?.isTTY === true && io.stderr.isTTY === true;
  const detach = interactive ? await attachTerminalPrompter(app, session.id, io) : undefined;
  const onSignal = async () => await app.agent.cancel(session.id, { reason: 'interrupted (SIGINT)' });
  io.signal?.addEventListener('abort', onSignal, { once: true });
  let result: RunResult;
  try {
    const sent = await app.agent
      .send({
        sessionId: session.id,
        prompt,
        agent: options.agent,
        model: options.model,
        maxSteps,
        yolo,
        unattended: 'fail',
        origin: 'cli',
        ifBusy: 'refuse',
      })
      .catch((error: unknown) => {
        // A run another process (or node) started after the check above: the same refusal, with
        // this command's next step rather than the agent tool's.
        const other = SvcError.is(error) && error.code === 'conflict' ? error.details : undefined;
        if (typeof other?.run_id === 'string')
          throw busyElsewhere(session.id, { run_id: other.run_id, pid: other.pid as number | null });
        throw error;
      });
    result = await app.agent.wait(sent.run_id);
    // Prompts the run queued for its own session run before the command returns.
    await app.agent.waitIdle(session.id);
  } finally {
    io.signal?.removeEventListener('abort', onSignal);
    detach?.();
    unsubscribe();
  }
  output.finish(result);
  ctx.exitCode = runExitCode(result);
}

/** The refusal of a prompt to a session whose run another svc process (or node) is running. */
function busyElsewhere(sessionId: string, other: { run_id: string; pid?: number | null }): SvcError {
  return new SvcError(
    'conflict',
    `session ${sessionId} is busy: run ${other.run_id} is running in another svc process (pid ${other.pid ?? '?'}); wait for it, cancel it (svc session cancel --session-id ${sessionId}), or use another session`,
    { details: { run_id: other.run_id, pid: other.pid ?? null } },
  );
}

interface Output {
  onEvent(event: SessionEvent): void;
  finish(result: RunResult): void;
}

/**
 * A key svc does not know (a typo such as `max_step`, `[models] larg`) is ignored: the run says so
 * on stderr first, or the typo would change what the run does without a word (`svc config
 * validate` lists them too). The names come from the user's files: one printable line each.
 */
function warnUnknownKeys(app: App, io: CliIo) {
  const unknown = app.loaded.warnings.filter((w) => w.startsWith('unknown config key '));
  for (const warning of unknown.slice(0, 5)) io.stderr.write(`svc: warning: ${printable(warning, 300)}\n`);
  if (unknown.length > 5)
    io.stderr.write(
      `svc: warning: ${unknown.length - 5} more unknown config keys; svc config validate lists them\n`,
    );
}

function createOutput(cli: CliIo, format: RunOptions['output'], sessionId: string): Output {
  const terminal = cli.stderr.isTTY === true;
  // Human text (stderr always; the model's text on stdout when it is a terminal) carries what the
  // model, a command or a provider wrote: no escape sequence of theirs reaches the terminal.
  const io = {
    stdout: {
      write: (text: string) =>
        cli.stdout.write(format === 'text' && cli.stdout.isTTY ? safeTerminalText(text) : text),
    },
    stderr: { write: (text: string) => cli.stderr.write(safeTerminalText(text)) },
  };
  let wroteText = false;
  let endedWithNewline = true;
  const hinted = new Set<string>();
  // A refusal waits for the end: the run's end lines repeat the one the run ended with (with its
  // next step), so only the others (made good later, or the run failed) are printed there.
  const refusals: { tool: string; failure: FailureReport }[] = [];
  const hint = (event: SessionEvent) => {
    const p = event.payload as { failure?: FailureReport; tool?: string };
    if (event.type !== 'tool.finished' || !p.failure || hinted.has(p.tool ?? '')) return;
    hinted.add(p.tool ?? '');
    if (REFUSAL_CODES.has(p.failure.code)) refusals.push({ tool: p.tool ?? '', failure: p.failure });
    else io.stderr.write(toolRefusedLine(p.failure));
  };
  const endLines = (result: RunResult) =>
    refusals
      .filter((r) => !(r.tool === result.refused?.tool && r.failure.summary === result.refused.summary))
      .map((r) => toolRefusedLine(r.failure))
      .join('') + runEndLines(result);
  switch (format) {
    case 'stream-json':
      return {
        onEvent(event) {
          io.stdout.write(
            `${JSON.stringify({ type: event.type, id: event.id, created_at: event.created_at, ...event.payload, session_id: event.session_id })}\n`,
          );
          hint(event);
        },
        finish(result) {
          io.stdout.write(`${JSON.stringify({ type: 'result', ...result })}\n`);
          io.stderr.write(endLines(result));
        },
      };
    case 'json':
      return {
        onEvent: hint,
        finish(result) {
          io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          io.stderr.write(endLines(result));
        },
      };
    case 'text':
      return {
        onEvent(event) {
          const p = event.payload as Record<string, unknown>;
          if (event.type === 'message.delta' && event.session_id === sessionId && p.part === 'text') {
            const delta = String(p.delta);
            io.stdout.write(delta);
            wroteText = true;
            endedWithNewline = delta.endsWith('\n');
          } else if (event.type === 'message.completed' && wroteText && !endedWithNewline) {
            io.stdout.write('\n');
            endedWithNewline = true;
          } else if (terminal && event.type === 'tool.started') {
            io.stderr.write(`  → ${String(p.title)}\n`);
          } else if (terminal && event.type === 'tool.finished' && p.is_error) {
            io.stderr.write(`  ✗ ${String(p.tool)}: ${String(p.summary)}\n`);
          }
          hint(event);
        },
        finish(result) {
          if (!wroteText && result.text) io.stdout.write(`${result.text}\n`);
          else if (wroteText && !endedWithNewline) io.stdout.write('\n');
          io.stderr.write(endLines(result));
        },
      };
    default: {
      const exhaustive: never = format;
      throw new SvcError('invalid_input', `--output: unknown format ${String(exhaustive)}`);
    }
  }
}

/**
 * Answers permission requests on the terminal with one keypress, the keys of every surface
 * (src/permissions/keys.ts): y allow once, s allow for this session, n (or Esc) deny. Ctrl-C
 * denies and interrupts the run. Other keys are ignored.
 */
async function attachTerminalPrompter(app: App, sessionId: string, io: CliIo): Promise<() => void> {
  const detach = app.agent.attach(sessionId, 'svc run (terminal)');
  const stdin = io.stdin as NodeJS.ReadStream;
  const waiting: { session_id: string; request_id: string; title: string; details?: unknown }[] = [];
  let asking = false;
  let onKey: ((chunk: Buffer | string) => void) | undefined;
  const release = () => {
    if (onKey) stdin.off('data', onKey);
    onKey = undefined;
    stdin.setRawMode?.(false);
    stdin.pause();
  };
  const ask = () => {
    const next = waiting.shift();
    if (!next) {
      asking = false;
      return;
    }
    asking = true;
    io.stderr.write(`\n? allow ${promptText(next.title, next.details)}\n  ${permissionChoices()} `);
    onKey = (chunk) => {
      const input = String(chunk);
      // An escape sequence (an arrow key) is not Esc: only a lone key counts.
      const escapeSequence = input.length > 1 && input[0] === '\u001b';
      const decision = escapeSequence ? undefined : decisionForKey(input[0] ?? '');
      if (!decision) return;
      release();
      io.stderr.write(`${permissionLabel(decision)}\n`);
      if (input[0] === '\u0003') process.kill(process.pid, 'SIGINT');
      // Through answer_permission, like every client; answered elsewhere or cancelled meanwhile
      // is no error here (the first answer won).
      void callTool(
        app,
        'answer_permission',
        { session_id: next.session_id, request_id: next.request_id, decision, by: 'terminal' },
        { surface: 'cli', sessionId },
      ).then(ask);
    };
    stdin.setRawMode?.(true);
    stdin.on('data', onKey);
    stdin.resume();
  };
  const unsubscribe = await app.agent.subscribe(
    sessionId,
    (event) => {
      if (event.type !== 'permission.requested') return;
      const p = event.payload as { session_id: string; request_id: string; title: string; details?: unknown };
      if (waiting.some((w) => w.request_id === p.request_id)) return;
      waiting.push({
        session_id: p.session_id,
        request_id: p.request_id,
        title: p.title,
        details: p.details,
      });
      if (!asking) ask();
    },
    { family: true },
  );
  return () => {
    unsubscribe();
    detach();
    release();
  };
}

/**
 * What is asked, as the terminal shows it: the title on one line, then the whole command (every
 * line) or the call's arguments, control characters shown rather than acted on: a title is a
 * summary (clipped, its newlines flattened), and a command that rewrote the line (`ESC [2K`) or
 * hid its second line behind a long first one showed another command than the one that runs.
 */
export function promptText(title: string, details: unknown): string {
  const lines = [visibleControls(title.replace(/[\r\n]+/g, ' '))];
  const d = details && typeof details === 'object' ? (details as Record<string, unknown>) : {};
  if (typeof d.command === 'string') {
    const command = d.command.split('\n');
    lines.push(...command.map((line, i) => `  ${i === 0 ? '$' : ' '} ${visibleControls(line)}`));
  } else if (d.arguments !== undefined) {
    lines.push(`  arguments: ${visibleControls(JSON.stringify(d.arguments))}`);
  }
  return lines.join('\n');
}

async function readStdin(io: CliIo): Promise<string> {
  const stdin = io.stdin;
  if (!stdin || stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
