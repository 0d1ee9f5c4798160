/**
 * The step end's writes to the session's tables (issue 18 item 6, p-pgstep): the step's messages
 * finished (./step-recorder.ts) and the session's usage. Where the store can hold them in one
 * statement (`closeStep`, PostgreSQL) they are one, where they were three (each statement costs
 * svc ≈ 0.12 ms there); on SQLite `closeStep` makes the same statements as the separate calls
 * did, with one promise where they and the Promise.all over them made many (p-stepcpu). Where
 * the run ledger can also write them first in the statement of the run's row and its `step.finished` (`closeStepWrite` with
 * `updateAndAppendAfter`, PostgreSQL, p-pgstep2), the whole step end is that one statement, all or
 * nothing by itself: no transaction around it, so no BEGIN, no COMMIT and no second round trip.
 * The rows, the events (`message.completed` once the messages are written, before the step's
 * `context.usage`) and their order are the same either way.
 * @module
 */
import type { Session, StepClose, Usage } from '../sessions/types';
import type { PrecedingWrite } from '../store/preceding-write';
import type { AgentHost } from './deps';
import type { StepRecorder } from './step-recorder';

/** The session's and the run's stores as the step end writes them. */
type StepEndStores = Pick<AgentHost, 'sessions' | 'runs'>;

/**
 * Whether a step's end is one statement on this store (`startStepClose` answers `before`), so it
 * needs no transaction around it; a step handed over to another node still writes apart.
 */
export function stepEndJoined(app: StepEndStores): boolean {
  return app.sessions.closeStepWrite !== undefined && app.runs.updateAndAppendAfter !== undefined;
}

/** What `startStepClose` answers: the writes sent (`written`) or to send (`before`). */
export interface StepClosing {
  written?: Promise<Session | undefined>;
  before?: PrecedingWrite<Session | undefined>;
  /** Publishes the completions, unless the caller's statement appended them (`announced`). */
  completed: (announced?: boolean) => void;
  /** The completions `completed` publishes, for a statement to append (`before`'s). */
  completions: () => { type: string; payload: Record<string, unknown> }[];
}

/**
 * Starts the writes: `written` resolves, once they all answered, to the session row as the usage
 * UPDATE left it, and `completed` publishes the messages' completions once the caller's writes all
 * answered (on PostgreSQL: with the step's `context.usage` right after them, one append of the
 * bus; a store without `closeStep` has published them already). With `before` instead of
 * `written`, nothing is sent yet: the caller hands it to `updateAndAppendAfter`, which writes it
 * first and answers its session row. Answered at once (no promise of its own: the step's end on
 * SQLite is synchronous) unless the run was handed over, when what the model wrote is flushed first.
 */
export function startStepClose(
  app: StepEndStores,
  recorder: StepRecorder,
  sessionId: string,
  stepUsage: Usage | null,
  cost: number,
): StepClosing | Promise<StepClosing> {
  const usage = stepUsage
    ? { input_tokens: stepUsage.input_tokens, output_tokens: stepUsage.output_tokens, cost }
    : undefined;
  const { sessions } = app;
  if (!sessions.closeStep) {
    const finishing = recorder.finish(stepUsage, cost);
    const session = usage ? sessions.addUsage(sessionId, usage) : undefined;
    return {
      written: Promise.all([finishing, session]).then(([, row]) => row),
      completed: () => {},
      completions: () => [],
    };
  }
  const messages = recorder.closing(stepUsage, cost);
  // Handed over: the step does not finish here; what the model wrote is stored unfinished.
  if (!messages)
    return recorder
      .flush()
      .then(() => recorder.releaseTool())
      .then(() => closeWith(app, recorder, sessionId, undefined, usage));
  return closeWith(app, recorder, sessionId, messages, usage, stepUsage, cost);
}

/** `startStepClose` once the messages' updates are known (`undefined`: handed over). */
function closeWith(
  app: StepEndStores,
  recorder: StepRecorder,
  sessionId: string,
  messages: StepClose['messages'] | undefined,
  usage: StepClose['usage'],
  stepUsage?: Usage | null,
  cost = 0,
): StepClosing {
  const { sessions } = app;
  const completed = (announced?: boolean) => {
    if (messages) recorder.completed(announced);
  };
  const completions = () => (messages ? recorder.completions() : []);
  const close = { sessionId, messages: messages ?? [], ...(usage ? { usage } : {}) };
  if (messages && sessions.closeStepWrite && stepEndJoined(app)) {
    // The step's held start, its assistant message inserted closed (p-heldstep), and its held
    // result (p-pgtoolend) go in this statement.
    const opened = recorder.heldOpen(stepUsage ?? null, cost);
    const created = recorder.heldClose();
    return {
      before: sessions.closeStepWrite({
        ...close,
        ...(created ? { created } : {}),
        ...(opened ? { opened } : {}),
      }),
      completed,
      completions,
    };
  }
  if (!messages?.length && !usage) return { written: Promise.resolve(undefined), completed, completions };
  return { written: sessions.closeStep?.(close), completed, completions };
}
