/**
 * The prompt stack ledger: one row per system-prompt assembly of the agent (`prompt_stack_builds`),
 * with each section's name, source, size, token estimate and a sha256 prefix — never the text.
 * It backs `get_prompt_stack_status` and `list_recent_prompt_stack_builds`: how big the prompt is,
 * what goes into it, and whether it stays byte-stable between turns (provider prompt caches).
 * @module
 */
import { createHash } from 'node:crypto';
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';

/** Rows kept; older builds are pruned on insert. */
export const PROMPT_STACK_RETENTION = 5000;

export interface PromptSectionInput {
  /** What the block is: base, agent_kind, environment, context_files, extension. */
  name: string;
  /** Where it comes from: builtin, agent:<id>, workspace, the file list, the extension's source. */
  source: string;
  text: string;
}

export interface PromptSectionRecord {
  name: string;
  source: string;
  chars: number;
  token_estimate: number;
  sha256_prefix: string;
}

export interface PromptBuild {
  build_id: string;
  session_id: string | null;
  run_id: string | null;
  agent: string;
  section_count: number;
  total_chars: number;
  token_estimate: number;
  /** sha256 of the whole system prompt, first 16 hex characters. */
  sha256_prefix: string;
  sections: PromptSectionRecord[];
  created_at: number;
}

export interface PromptStackLedger {
  /** Record one assembly (the joined prompt and its sections); returns the stored metadata. */
  record(input: {
    sessionId?: string;
    runId?: string;
    agent: string;
    system: string;
    sections: PromptSectionInput[];
  }): PromptBuild;
  /** Newest first. */
  recent(options?: { sessionId?: string; limit?: number }): PromptBuild[];
  count(sessionId?: string): number;
  /** Whether the table can be read, and why not. */
  available(): { ok: true } | { ok: false; reason: string };
}

interface Row extends Omit<PromptBuild, 'sections'> {
  id: number;
  sections: string;
}

/** A rough, tokenizer-free estimate (about four characters per token for English and code). */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);

export const sha256Prefix = (text: string, length = 16): string =>
  createHash('sha256').update(text).digest('hex').slice(0, length);

export function createPromptStackLedger(deps: { db: () => Db; clock: Clock; ids: Ids }): PromptStackLedger {
  const toBuild = ({ id: _id, sections, ...rest }: Row): PromptBuild => ({
    ...rest,
    sections: JSON.parse(sections) as PromptSectionRecord[],
  });
  const db = (): Db => {
    try {
      return deps.db();
    } catch (error) {
      throw new SvcError(
        'unavailable',
        `prompt stack ledger unavailable: ${SvcError.is(error) ? error.message : String(error)}`,
        { cause: error },
      );
    }
  };

  return {
    record(input) {
      const sections = input.sections.map((s) => ({
        name: s.name,
        source: s.source,
        chars: s.text.length,
        token_estimate: estimateTokens(s.text.length),
        sha256_prefix: sha256Prefix(s.text),
      }));
      const build: PromptBuild = {
        build_id: deps.ids.next('psb'),
        session_id: input.sessionId ?? null,
        run_id: input.runId ?? null,
        agent: input.agent,
        section_count: sections.length,
        total_chars: input.system.length,
        token_estimate: estimateTokens(input.system.length),
        sha256_prefix: sha256Prefix(input.system),
        sections,
        created_at: deps.clock.now(),
      };
      const handle = db();
      const id = Number(
        handle
          .prepare(
            `INSERT INTO prompt_stack_builds (build_id, session_id, run_id, agent, section_count, total_chars,
               token_estimate, sha256_prefix, sections, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            build.build_id,
            build.session_id,
            build.run_id,
            build.agent,
            build.section_count,
            build.total_chars,
            build.token_estimate,
            build.sha256_prefix,
            JSON.stringify(sections),
            build.created_at,
          ).lastInsertRowid,
      );
      if (id > PROMPT_STACK_RETENTION) {
        handle.prepare('DELETE FROM prompt_stack_builds WHERE id <= ?').run(id - PROMPT_STACK_RETENTION);
      }
      return build;
    },
    recent(options = {}) {
      const limit = options.limit ?? 20;
      const rows = (
        options.sessionId
          ? db()
              .prepare('SELECT * FROM prompt_stack_builds WHERE session_id = ? ORDER BY id DESC LIMIT ?')
              .all(options.sessionId, limit)
          : db().prepare('SELECT * FROM prompt_stack_builds ORDER BY id DESC LIMIT ?').all(limit)
      ) as Row[];
      return rows.map(toBuild);
    },
    count(sessionId) {
      const row = (
        sessionId
          ? db().prepare('SELECT count(*) AS n FROM prompt_stack_builds WHERE session_id = ?').get(sessionId)
          : db().prepare('SELECT count(*) AS n FROM prompt_stack_builds').get()
      ) as { n: number };
      return row.n;
    },
    available() {
      try {
        db().prepare('SELECT 1 FROM prompt_stack_builds LIMIT 1').get();
        return { ok: true };
      } catch (error) {
        return { ok: false, reason: SvcError.is(error) ? error.message : String(error) };
      }
    },
  };
}
