/**
 * `svc` with no arguments (and `svc tui`) opens the terminal UI on this workspace, in process.
 * Ink and react load only here, through `await import()`, so no other command pays for them.
 * @module
 */
import { join, resolve } from 'node:path';
import { dropUserTimingEntries, trimWhenIdle, tuneHeapForLongRunning } from '../../../util/heap';
import { holdMmapThreshold } from '../../../util/malloc';
import { withProductionReact } from '../../tui/production-react';
import type { CliContext, CliRegistrar } from '../context';

/** The old generation grows to 1.2x what survived the last full GC (the service: 1.3x). */
const TUI_HEAP_GROWING_PERCENT = 20;

interface TuiOptions {
  session?: string;
  continue?: boolean;
}

export const registerTui: CliRegistrar = (program, ctx) => {
  // `svc` alone opens the TUI; `svc <word>` that is no command is a usage error naming it (the
  // root takes excess arguments only to say so: index.ts allows them after every registration).
  program.action(
    (_options: unknown, command: { args: string[]; error(message: string, o: object): never }) => {
      if (command.args.length > 0)
        command.error(`error: unknown command '${command.args[0]}'`, { code: 'commander.unknownCommand' });
      return openTui(ctx, {});
    },
  );
  program
    .command('tui')
    .description('open the terminal UI (the default when svc runs with no arguments)')
    .option('-s, --session <id>', 'open this session')
    .option('--continue', 'open the most recent session')
    .action((options: TuiOptions) => openTui(ctx, options));
};

async function openTui(ctx: CliContext, options: TuiOptions): Promise<void> {
  // React's production build: the TUI's modules load with NODE_ENV=production, restored right
  // after, before the app exists (nothing of svc runs a command meanwhile).
  const [{ runTui }, { createLocalClient }, { askWorkspaceTrust }] = await withProductionReact(() =>
    Promise.all([
      import('../../tui/run'),
      import('../../tui/local-client'),
      import('../../tui/trust-prompt'),
    ]),
  );
  const io = ctx.io;
  const decision = await workspaceTrustDecision(ctx, askWorkspaceTrust);
  if (decision === 'quit') return;
  const app = await ctx.app({ workspaceTrust: { interactive: true, ...(decision ? { decision } : {}) } });
  tuneHeapForLongRunning(io.env, TUI_HEAP_GROWING_PERCENT);
  dropUserTimingEntries();
  const trim = trimWhenIdle();
  app.runtime.surfaces.add('tui');
  await runTui({
    client: createLocalClient(app),
    log: app.log.child({ component: 'tui' }),
    env: io.env,
    stdin: (io.stdin ?? process.stdin) as NodeJS.ReadStream,
    stdout: io.stdout as NodeJS.WriteStream,
    stderr: io.stderr as NodeJS.WriteStream,
    sessionId: options.session,
    continueLast: options.continue,
    historyFile: join(app.dataDir, 'tui', 'history.jsonl'),
    selfCommand: selfCommand(),
    checkpoints: app.config.tui.checkpoint_prompts,
    // One GC once started: the start-up's garbage goes, and V8 sizes the old generation from what
    // is live (it grew to ≈ 58 MB before its first full GC otherwise); one after every run. Then
    // glibc's mmap threshold held as the service holds it (util/malloc.ts): after the first frame,
    // so koffi's load (≈ 15–25 ms) is not in the TUI's start.
    onStarted: () => {
      trim.now();
      holdMmapThreshold(io.env);
    },
    onRunEnd: trim.now,
  });
}

/**
 * Before the app exists: when the workspace's own config sets keys that need trust and the
 * workspace is not trusted (config/trust.ts), the dialog asks. Trust is remembered; "continue
 * without" drops those keys for this process; quit ends here. Undefined: nothing to ask.
 */
async function workspaceTrustDecision(
  ctx: CliContext,
  ask: typeof import('../../tui/trust-prompt').askWorkspaceTrust,
): Promise<'trust' | 'without' | 'quit' | undefined> {
  const { io } = ctx;
  const stdin = (io.stdin ?? process.stdin) as NodeJS.ReadStream;
  // Without a terminal the TUI refuses to start (tui/run.tsx says why): nothing to ask.
  if (!stdin.isTTY || !io.stdout.isTTY) return undefined;
  const { loadConfig, globalConfigDir } = await import('../../../config/load');
  const g = ctx.globals();
  const check = loadConfig(
    {
      workspace: resolve(io.cwd, g.cwd ?? '.'),
      env: io.env,
      configFile: g.config,
      overrides: g.c ?? [],
      trust: { interactive: true, ...(g.trustWorkspace ? { decision: 'trust' } : {}) },
    },
    { tolerant: true },
  );
  if (!check.trust?.ask) return undefined;
  const answer = await ask({
    report: check.trust,
    stdin,
    stdout: io.stdout as NodeJS.WriteStream,
    stderr: io.stderr as NodeJS.WriteStream,
  });
  if (answer === 'trust') {
    const { trustWorkspace } = await import('../../../config/trust');
    trustWorkspace(globalConfigDir(io.env), check.trust.workspace);
  }
  return answer;
}

/** How to run this same svc binary again (Manage Providers runs `svc auth …`). */
function selfCommand(): string[] {
  const script = process.argv[1];
  return script ? [process.execPath, script] : ['svc'];
}
