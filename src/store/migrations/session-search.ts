import type { Migration } from './types';

/**
 * The searchable text of a message's parts (a JSON array in `messages.parts`): text, tool-call
 * input, tool-result output and error messages, one per line. Reasoning and file data are left
 * out. Malformed JSON and non-object parts read as nothing, so a write never fails on them.
 */
export const bodyOf = (parts: string) => `coalesce((SELECT group_concat(t, char(10)) FROM (
    SELECT CASE json_extract(p.value, '$.type')
      WHEN 'text' THEN json_extract(p.value, '$.text')
      WHEN 'tool-call' THEN json_extract(p.value, '$.input')
      WHEN 'tool-result' THEN json_extract(p.value, '$.output')
      WHEN 'error' THEN json_extract(p.value, '$.message')
    END AS t
    FROM json_each(CASE WHEN json_valid(${parts}) THEN ${parts} ELSE '[]' END) p
    WHERE p.type = 'object')), '')`;

/** The tools a message calls or answers, as `,name,name,` (searched with instr(',' || tool || ',')). */
export const toolsOf = (
  parts: string,
) => `coalesce((SELECT ',' || group_concat(DISTINCT json_extract(p.value, '$.tool')) || ','
    FROM json_each(CASE WHEN json_valid(${parts}) THEN ${parts} ELSE '[]' END) p
    WHERE p.type = 'object' AND json_extract(p.value, '$.type') IN ('tool-call', 'tool-result')), '')`;

/**
 * Issue 22 item 3: full-text search over messages. `message_search_docs` holds each message's
 * searchable text with the columns the filters need (session, role, tools, date); the FTS5 index
 * `message_search` is an external-content table over it (bm25, snippets). Triggers on `messages`
 * keep both in sync with every write (append, update of parts, delete, a session's cascade), and
 * the migration backfills the messages stored before it.
 */
export const sessionSearchMigrations: Migration[] = [
  {
    id: 3,
    name: 'message full-text search',
    sql: `
      CREATE TABLE message_search_docs (
        id INTEGER PRIMARY KEY,
        message_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL,
        tools TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL DEFAULT ''
      );
      CREATE INDEX message_search_docs_session ON message_search_docs(session_id, created_at);
      CREATE INDEX message_search_docs_time ON message_search_docs(created_at);
      CREATE VIRTUAL TABLE message_search USING fts5(
        body,
        content = 'message_search_docs',
        content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2',
        prefix = '2 3'
      );
      CREATE TRIGGER message_search_docs_ai AFTER INSERT ON message_search_docs BEGIN
        INSERT INTO message_search (rowid, body) VALUES (NEW.id, NEW.body);
      END;
      CREATE TRIGGER message_search_docs_ad AFTER DELETE ON message_search_docs BEGIN
        INSERT INTO message_search (message_search, rowid, body) VALUES ('delete', OLD.id, OLD.body);
      END;
      CREATE TRIGGER message_search_docs_au AFTER UPDATE OF body ON message_search_docs BEGIN
        INSERT INTO message_search (message_search, rowid, body) VALUES ('delete', OLD.id, OLD.body);
        INSERT INTO message_search (rowid, body) VALUES (NEW.id, NEW.body);
      END;
      CREATE TRIGGER message_search_ai AFTER INSERT ON messages BEGIN
        INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body)
          VALUES (NEW.id, NEW.session_id, NEW.role, ${toolsOf('NEW.parts')}, NEW.created_at, ${bodyOf('NEW.parts')});
      END;
      CREATE TRIGGER message_search_au AFTER UPDATE OF parts ON messages WHEN OLD.parts IS NOT NEW.parts BEGIN
        UPDATE message_search_docs SET tools = ${toolsOf('NEW.parts')}, body = ${bodyOf('NEW.parts')}
          WHERE message_id = NEW.id;
      END;
      CREATE TRIGGER message_search_ad AFTER DELETE ON messages BEGIN
        DELETE FROM message_search_docs WHERE message_id = OLD.id;
      END;
      INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body)
        SELECT m.id, m.session_id, m.role, ${toolsOf('m.parts')}, m.created_at, ${bodyOf('m.parts')}
        FROM messages m ORDER BY m.created_at, m.rowid;
    `,
  },
  {
    // Issue 17 item 3: no query reads message_search_docs by created_at alone (the date filter of
    // a search is an optional term the planner cannot take to an index; EXPLAIN QUERY PLAN of
    // docRange scans message_search_docs_session). The index was one more page in every commit
    // that indexed a message (≈0.5 WAL frames of a compat request).
    id: 4,
    name: 'drop the unused message_search_docs_time index',
    sql: 'DROP INDEX IF EXISTS message_search_docs_time;',
  },
  {
    // Issue 17 item 2: the index off the write path. A message's INSERT and its parts' UPDATE only
    // log its id (one append to a one-b-tree table); ../message-search-log.ts indexes the logged
    // messages in one transaction before a search, two seconds after a process's writes and
    // at close. Deletes still remove the indexed row at once. The log starts empty: the old
    // triggers indexed every message up to this migration.
    id: 5,
    name: 'message search index written from a log',
    sql: `
      CREATE TABLE message_search_pending (
        id INTEGER PRIMARY KEY,
        message_id TEXT NOT NULL
      );
      DROP TRIGGER IF EXISTS message_search_ai;
      DROP TRIGGER IF EXISTS message_search_au;
      CREATE TRIGGER message_search_log_ai AFTER INSERT ON messages BEGIN
        INSERT INTO message_search_pending (message_id) VALUES (NEW.id);
      END;
      CREATE TRIGGER message_search_log_au AFTER UPDATE OF parts ON messages WHEN OLD.parts IS NOT NEW.parts BEGIN
        INSERT INTO message_search_pending (message_id) VALUES (NEW.id);
      END;
    `,
  },
];
