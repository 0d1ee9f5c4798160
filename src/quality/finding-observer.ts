/**
 * Feeds the finding lifecycle from what already happens, without touching the agent loop: run
 * ledger events (`local_shell_finished` from bash, `diagnostics.reported` from the diagnostics
 * tool) open and fix findings; bus events (`file.changed`, `run.finished`) acknowledge them, mark
 * them stale when their file goes away, and sweep the ones not seen for a long time. The updates
 * run in the observer's own async context (../events/own-context.ts), never in the transaction of
 * the ledger append or the event's publisher: they are not that writer's to commit or roll back.
 * @module
 */
import type { EventBus, SessionEvent } from '../events/bus';
import { ownContext } from '../events/own-context';
import type { SessionEventPayloads } from '../events/types';
import type { Logger } from '../log';
import type { RunEvent, RunLedger } from '../runs/run-ledger';
import { classifyShell } from './checks';
import type { Actor, FindingService } from './findings';

/** Exit codes that mean the command could not run at all (not found, not executable): no verdict. */
const NOT_RUN = new Set([126, 127]);

interface ShellFinished {
  command?: string;
  cwd?: string;
  exit_code?: number | null;
  timed_out?: boolean;
  commands?: string[][];
  output_tail?: string;
}

interface DiagnosticsReported {
  path?: string;
  server?: string;
  complete?: boolean;
  truncated?: boolean;
  errors?: { line: number; column: number; message: string; source?: string; code?: string }[];
}

export function startFindingObserver(deps: {
  runs: RunLedger;
  bus: EventBus;
  findings: FindingService;
  log: Logger;
}): () => void {
  const { findings } = deps;
  const failed = (what: string) => (error: unknown) =>
    deps.log.warn('finding lifecycle update failed', { what, error });
  // Listeners are sync: each update is queued by the finding service in event order (await
  // `findings.flush()` to see them applied); a failure is logged.
  const guarded = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      failed(what)(error);
    }
  };
  const queued = (what: string, update: Promise<unknown>) => void update.catch(failed(what));
  const own = ownContext('svc.finding-observer');

  const onShell = (event: RunEvent) => {
    const payload = event.payload as ShellFinished;
    const check = classifyShell(payload.commands ?? [], payload.cwd ?? '.');
    if (!check?.conclusive) return;
    if (payload.timed_out || typeof payload.exit_code !== 'number' || NOT_RUN.has(payload.exit_code)) return;
    const actor: Actor = { sessionId: event.session_id, runId: event.run_id, source: 'bash' };
    if (payload.exit_code === 0) {
      queued(event.type, findings.checkPassed(check, actor));
      return;
    }
    const update = findings.observe(
      {
        kind: 'check',
        fingerprint: `check:${check.key}`,
        title: `${check.label} failed (exit ${payload.exit_code})`,
        detail: payload.output_tail,
        checkKey: check.key,
        checkCommand: payload.command,
        checkKind: [...new Set(check.checks.map((c) => c.kind))].join(','),
      },
      actor,
    );
    queued(event.type, update);
  };

  const onDiagnostics = (event: RunEvent) => {
    const payload = event.payload as DiagnosticsReported;
    if (!payload.path) return;
    const actor: Actor = { sessionId: event.session_id, runId: event.run_id, source: 'diagnostics' };
    const present: string[] = [];
    for (const error of payload.errors ?? []) {
      const fingerprint = `diagnostic:${payload.path}:${error.source ?? payload.server ?? ''}:${error.code ?? ''}:${error.message.replace(/\s+/g, ' ').trim()}`;
      present.push(fingerprint);
      const where = `${payload.path}:${error.line}:${error.column}`;
      const origin = [error.source ?? payload.server, error.code].filter(Boolean).join(' ');
      const update = findings.observe(
        {
          kind: 'diagnostic',
          fingerprint,
          title: `${where} ${origin ? `${origin}: ` : ''}${firstLine(error.message)}`,
          detail: error.message,
          path: payload.path,
          line: error.line,
        },
        actor,
      );
      queued(event.type, update);
    }
    // A partial answer proves nothing about the errors it did not list.
    if (payload.complete && !payload.truncated)
      queued(event.type, findings.diagnosticsReported(payload.path, present, actor));
  };

  const offLedger = deps.runs.onAppend((event) => {
    if (event.type === 'local_shell_finished') guarded(event.type, () => own.run(() => onShell(event)));
    else if (event.type === 'diagnostics.reported')
      guarded(event.type, () => own.run(() => onDiagnostics(event)));
  });
  const onBus = (event: SessionEvent) => {
    if (event.type === 'file.changed') {
      const payload = event.payload as SessionEventPayloads['file.changed'];
      queued(
        event.type,
        findings.fileChanged(payload.path, payload.change, {
          sessionId: payload.session_id,
          runId: payload.run_id,
          source: 'file_change',
        }),
      );
    } else if (event.type === 'run.finished') {
      const payload = event.payload as SessionEventPayloads['run.finished'];
      queued(
        event.type,
        findings.sweep({ sessionId: payload.session_id, runId: payload.run_id, source: 'sweep' }),
      );
    }
  };
  const offBus = deps.bus.subscribe('*', (event) => {
    if (event.type !== 'file.changed' && event.type !== 'run.finished') return;
    // A run's end sweeps: nothing queued and nothing the sweep would move (every compat
    // request's end, SQLite answers at once), nothing to queue.
    if (event.type === 'run.finished' && deps.findings.sweepsNothing?.()) return;
    own.run(() => onBus(event));
  });
  return () => {
    offLedger();
    offBus();
  };
}

function firstLine(text: string): string {
  const line = text.split('\n')[0].trim();
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
