/**
 * A run's prompt message written in another domain's statement on PostgreSQL (issue 18 item 6,
 * p-pgstart2): a new compat session's first run is inserted claimed with its session in one
 * statement (src/runs/pg-run-create-claimed.ts); its prompt message and the message's search row
 * ride in it too, so the start is that one statement. The session is inserted by the same
 * statement: it has no other message, and its `updated_at` is its INSERT's (a data-modifying
 * `WITH` cannot update a row another one of the statement inserts).
 * @module
 */
import type { TrailingInsert } from '../store/preceding-write';
import type { Clock, Ids } from '../util/ids';
import { appendedMessage } from './message-store';
import { MESSAGE_COLUMNS } from './pg-message-store';
import { messagesVersion, wroteMessages } from './pg-session-rows';
import { searchDocOf, tsvectorOf } from './search-doc';
import type { HeldPrompt, SessionStore } from './types';

type AppendInput = Parameters<SessionStore['appendMessage']>[0];

const params = (offset: number, count: number) =>
  Array.from({ length: count }, (_, i) => `$${offset + i + 1}`).join(', ');

/** The message's INSERT, its parameters from `$offset+1` (the columns' order). */
const messageInsert = (offset: number) =>
  `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES (${params(offset, 12)})`;

/** The message's search row (../sessions/search-doc.ts), as the append writes it. */
const searchInsert = (offset: number) =>
  `INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms) VALUES (${params(offset, 6)}, $${offset + 7}::tsvector)`;

/** `SessionStore.promptInsert` on PostgreSQL: the message as `appendMessage` would write it. */
export function postgresPromptInsert(deps: { clock: Clock; ids: Ids }): (input: AppendInput) => HeldPrompt {
  return (input) => {
    const now = deps.clock.now();
    const id = deps.ids.next('msg');
    const partsJson = JSON.stringify(input.parts);
    const finishedAt = input.finished === false ? null : now;
    const doc = searchDocOf(input.parts);
    let version: number | undefined;
    const message = appendedMessage(input, id, partsJson, now, finishedAt);
    const row = [
      ...[id, input.session_id, input.role, partsJson, input.model ?? null, input.provider ?? null],
      ...[input.usage ? JSON.stringify(input.usage) : null, input.cost ?? 0, input.run_id ?? null],
      ...[now, now, finishedAt],
    ];
    const inserts: TrailingInsert[] = [
      {
        values: row,
        sql: messageInsert,
        wrote: () => {
          wroteMessages(input.session_id);
          version = messagesVersion(input.session_id);
        },
      },
      {
        values: [id, input.session_id, input.role, doc.tools, now, doc.body, tsvectorOf(doc.body)],
        sql: searchInsert,
        wrote: () => {},
      },
    ];
    return {
      message,
      inserts,
      written: () =>
        version === undefined
          ? undefined
          : { messages: [appendedMessage(input, id, partsJson, now, finishedAt)], version },
    };
  };
}
