/**
 * A run stopped between its tool step's last tool end and its step end on PostgreSQL, where what
 * the step holds for its step end's statement is written by the stopper (`StopState.release`,
 * src/agent/end-step.ts `releaseOnStop`), so its session events come before the stop's
 * `state.changed`, as on SQLite (issue 18 item 2: the same session log on both backends). One
 * table over the step's tools, each row what its step holds:
 * - a call that may change anything (`echo`): its result held (p-pgtoolend; the operator's cancel
 *   of it is STORE-PG-381, ./pg-held-paths.test.ts);
 * - a read-only call (`echo` flagged `readsOnly`): its start held too (p-heldstep);
 * - three read-only calls: every start and result held (p-heldmulti).
 * The scenarios: the operator's cancel (the next run's model sees the results), a cancel another
 * process asks through the run ledger (the run's cancel poll), the operator's cancel while the
 * bus's write queue is busy with another session's append (the release's events reserved in the
 * queue, `EventBus.reserve`), and a release whose tool message statement fails (the cut step
 * writes it, its events after the stop's).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import type { AnyTool } from '../../src/tools/core/define-tool';
import { echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { cancelBehindBusyQueue, faultyClient, logged } from '../helpers/faulty-client';
import { startStatement } from '../helpers/held-start';
import {
  MESSAGE_INSERT,
  type Run,
  readingEcho,
  runTypes,
  sessionLogSound,
  wholeStep,
} from '../helpers/held-step';
import { stopInTheGap, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** A row: the step's tool and calls, what PostgreSQL holds at the stop, and its scenarios' test ids. */
interface Row {
  name: string;
  tool: AnyTool;
  /** The step's calls' texts (echoed back, in call order). */
  texts: string[];
  /** The step's assistant messages stored when the stop came (PostgreSQL: none when its start is held). */
  stored: number;
  ids: Partial<Record<'cancel' | 'ledger' | 'busy' | 'fails', string>>;
}

const ROWS: Row[] = [
  {
    name: 'a call that may change anything: its result held',
    tool: echoTool,
    texts: ['m'],
    stored: 1,
    ids: { ledger: 'STORE-PG-420', busy: 'STORE-PG-450', fails: 'STORE-PG-451' },
  },
  {
    name: 'a read-only call: its start and result held',
    tool: readingEcho,
    texts: ['m'],
    stored: 0,
    ids: { cancel: 'STORE-PG-514', ledger: 'STORE-PG-515', busy: 'STORE-PG-516', fails: 'STORE-PG-517' },
  },
  {
    name: 'three read-only calls: every start and result held',
    tool: readingEcho,
    texts: ['a', 'b', 'c'],
    stored: 0,
    ids: { cancel: 'STORE-PG-596', ledger: 'STORE-PG-601', busy: 'STORE-PG-597', fails: 'STORE-PG-602' },
  },
];

/** The step's session events from its assistant message to its last result, as SQLite publishes them. */
const stepLog = (calls: number) => [
  'message.created',
  'tool.started',
  'tool.finished',
  'message.created',
  ...Array.from({ length: calls - 1 }, () => ['tool.started', 'tool.finished']).flat(),
];

/** The session log from the step's assistant message, `length` events. */
const fromStep = (types: string[], length: number) => {
  const at = types.indexOf('tool.started') - 1;
  return types.slice(at, at + length);
};

/** The tool messages' results, in call order. */
const outputs = (r: Run) =>
  r.messages
    .filter((m) => m.role === 'tool')
    .map((m) => m.parts.map((p) => ('output' in p ? p.output : p.type)));

/** A cancel asked through the run ledger (as another process would), once the run's poll has cancelled. */
async function ledgerCancel(app: App, sessionId: string) {
  const cancelling = new Promise<void>((resolve) => {
    const off = app.bus.subscribe(sessionId, (event) => {
      if (event.type !== 'state.changed' || event.payload.state !== 'cancelling') return;
      off();
      resolve();
    });
  });
  const run = await app.runs.running(sessionId);
  if (!run) throw new Error('no running run');
  await app.runs.requestCancel(run.id);
  await cancelling;
}

describe.skipIf(!pg.available)(
  'a stop in the gap before a held step`s end (PostgreSQL against SQLite)',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    /** The row's step stopped at its last result by `arm`, on SQLite, then on PostgreSQL (a faulty client). */
    const stopped = async (
      row: Row,
      arm: (
        app: App,
        sessionId: string,
        faults: ReturnType<typeof faultyClient> | undefined,
      ) => Promise<unknown>,
    ) => {
      const gap = stopInTheGap();
      let faults: ReturnType<typeof faultyClient> | undefined;
      const atStop: number[] = [];
      const started = (app: App, sessionId: string) => {
        gap.arm(async () => {
          const stored = await app.sessions.messages(sessionId);
          atStop.push(stored.filter((m) => m.role === 'assistant').length);
          return arm(app, sessionId, faults);
        }, row.texts.length);
      };
      const script = () => [
        row.texts
          .reduce((step, text, i) => step.toolCall('echo', { text }, `call_${i}`), reply())
          .usage(100, 20),
        reply().text('no'),
      ];
      const options = { tools: [row.tool], started, title: row.name, closers };
      try {
        const lite = await storeRun(undefined, script(), options);
        const r = await storeRun(pg.cluster(), script(), {
          ...options,
          client: (sql: SqlClient) => {
            faults = faultyClient(sql);
            return faults.client;
          },
        });
        expect(gap.states).toEqual(['written', 'held']);
        expect(atStop).toEqual([1, row.stored]);
        expect(lite.status).toBe('cancelled');
        expect(r.status).toBe('cancelled');
        expect(outputs(r)).toEqual([row.texts.map((text) => `echo: ${text}`)]);
        expect(r.messages.filter((m) => m.role === 'tool')[0]?.finished_at).not.toBeNull();
        // Nothing of the step went in a step end: the stop wrote it (the read-only steps' assistant
        // message with its start, their tool message with the rest: the same text for several calls).
        expect(r.sent.filter(wholeStep)).toEqual([]);
        expect(r.sent.filter(startStatement)).toHaveLength(row.texts.length > 1 ? 2 : 1);
        return { lite, r, faults };
      } finally {
        gap.restore();
        faults?.open();
      }
    };

    /** The step's events before the stop's state.changed, the log as stored, run events as SQLite's. */
    const sameAsSqlite = async (row: Row, lite: Run, r: Run) => {
      const shape = storeRunShape(r);
      expect(shape).toEqual(storeRunShape(lite));
      const log = stepLog(row.texts.length);
      expect(fromStep(shape.session, log.length + 1)).toEqual([...log, 'state.changed']);
      expect(await logged(r.sql as SqlClient, r.session.id)).toEqual(r.sessionEvents.map((e) => e.type));
      const types = runTypes(r);
      expect(types).toEqual(runTypes(lite));
      expect(types.filter((t) => t === 'tool.finished')).toHaveLength(row.texts.length);
      expect(types.indexOf('tool.finished')).toBe(types.indexOf('tool.started') + 1);
    };

    const scenarios: Record<keyof Row['ids'], { title: string; run: (row: Row) => Promise<void> }> = {
      cancel: {
        title:
          'the operator`s cancel in the gap writes what is held, its session events before the state.changed, as on SQLite; the next run`s model sees the results',
        run: async (row) => {
          const { lite, r } = await stopped(row, (app, sessionId) => app.agent.cancel(sessionId));
          await sameAsSqlite(row, lite, r);
          await sessionLogSound(r);
          const next = (await r.app.agent.send({ sessionId: r.session.id, prompt: 'again' })).run_id;
          expect((await r.app.agent.wait(next)).status).toBe('completed');
          const sent = JSON.stringify(r.provider.requests.at(-1)?.body.messages);
          for (const [i, text] of row.texts.entries()) {
            expect(sent).toContain(`echo: ${text}`);
            expect(sent).toContain(`call_${i}`);
          }
        },
      },
      ledger: {
        title:
          'a cancel asked through the run ledger in the gap: what is held written, its events before the state.changed (cancelling), each once, as on SQLite',
        run: async (row) => {
          const { lite, r } = await stopped(row, ledgerCancel);
          await sameAsSqlite(row, lite, r);
          await sessionLogSound(r);
        },
      },
      busy: {
        title:
          'the operator`s cancel in the gap while the bus`s write queue is busy (another session`s append held): the held events reserved before the state.changed, the session log in SQLite`s order',
        run: async (row) => {
          let toolRows = 0;
          const { lite, r } = await stopped(row, async (app, sessionId, f) => {
            toolRows = await cancelBehindBusyQueue(app, sessionId, f);
          });
          expect(toolRows).toBe(1);
          await sameAsSqlite(row, lite, r);
          // Ids ascending in that order (the other session's took one among them), each once; a
          // replay the same; the other session's event written once.
          const ids = r.sessionEvents.map((e) => e.id);
          expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y));
          const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
          expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
          expect(await logged(r.sql as SqlClient, 'ses_other')).toEqual(['queue.changed']);
        },
      },
      fails: {
        title:
          'a cancel in the gap whose tool message statement fails: what went before it (the start) before the state.changed, the results held again and stored once by the cut step, after it; SQLite`s run events and messages',
        run: async (row) => {
          const { lite, r, faults } = await stopped(row, async (app, sessionId, f) => {
            f?.failWhere((text, values) => MESSAGE_INSERT.test(text) && values[2] === 'tool');
            await app.agent.cancel(sessionId);
          });
          expect(faults?.failed).toHaveLength(1);
          const shape = storeRunShape(r);
          const liteShape = storeRunShape(lite);
          expect(shape.run).toEqual(liteShape.run);
          expect(shape.messages).toEqual(liteShape.messages);
          // The failed statement's events could not keep their place: the cut step's write (the
          // results' events and the tool message's) comes after the stop's state.changed.
          const results = stepLog(row.texts.length).slice(2);
          const moved = (types: string[]) => {
            const at = types.indexOf('tool.finished');
            const out = [...types];
            out.splice(at, results.length);
            out.splice(at + 1, 0, ...results);
            return out;
          };
          expect(shape.session).toEqual(moved(liteShape.session));
          expect(fromStep(shape.session, results.length + 3)).toEqual([
            'message.created',
            'tool.started',
            'state.changed',
            ...results,
          ]);
          await sessionLogSound(r);
        },
      },
    };

    for (const row of ROWS)
      describe(row.name, () => {
        for (const [key, scenario] of Object.entries(scenarios)) {
          const id = row.ids[key as keyof Row['ids']];
          if (id) it(`${id}: ${scenario.title}`, () => scenario.run(row));
        }
      });
  },
);
