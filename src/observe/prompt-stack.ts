/**
 * The prompt stack ledger: one row per system-prompt assembly of the agent (`prompt_stack_builds`),
 * with each section's name, source, size, token estimate and a sha256 prefix — never the text.
 * It backs `get_prompt_stack_status` and `list_recent_prompt_stack_builds`: how big the prompt is,
 * what goes into it, and whether it stays byte-stable between turns (provider prompt caches).
 * @module
 */
import { createHash } from 'node:crypto';
import { SvcError } from '../errors';
import type { RidingInsert } from '../store/preceding-write';
import type { Clock, Ids } from '../util/ids';
import type { PromptBuild, PromptStackStore } from './prompt-stack-store';

export type { PromptBuild, PromptSectionRecord } from './prompt-stack-store';

/** Rows kept at most; older builds are pruned on insert. */
export const PROMPT_STACK_RETENTION = 5000;
/**
 * Builds pruned at once: a prune leaves `PROMPT_STACK_RETENTION - PROMPT_STACK_PRUNE_BATCH` rows,
 * so a busy service deletes once every this many builds, not on every build past the limit.
 */
export const PROMPT_STACK_PRUNE_BATCH = 100;

export interface PromptSectionInput {
  /** What the block is: base, agent_kind, environment, context_files, extension. */
  name: string;
  /** Where it comes from: builtin, agent:<id>, workspace, the file list, the extension's source. */
  source: string;
  text: string;
}

export interface PromptStackLedger {
  /** Record one assembly (the joined prompt and its sections); returns the stored metadata. */
  record(input: {
    sessionId?: string;
    runId?: string;
    agent: string;
    system: string;
    sections: PromptSectionInput[];
  }): Promise<PromptBuild>;
  /**
   * Holds the builds `record` makes for this run (PostgreSQL, where the store can hand its insert
   * over): `record` answers as usual but writes nothing; the returned function ends the hold and
   * gives the held build's insert, for the caller to write in its own statement and then report
   * the row id with `written` (the prune check `record` makes). Undefined: nothing held (nothing
   * recorded during the hold, or a store that cannot hand its insert over: `record` wrote it).
   */
  hold(runId: string): () => HeldBuild | undefined;
  /**
   * `hold` where the store inserts with no promise (SQLite, p-promptheld): the returned function
   * ends the hold and gives the held build's insert, made when called (the prune check with it: a
   * promise only when it prunes). Undefined: nothing held (`record` wrote it, or nothing recorded).
   */
  holdNow(runId: string): () => (() => Promise<void> | undefined) | undefined;
  /** Newest first. */
  recent(options?: { sessionId?: string; limit?: number }): Promise<PromptBuild[]>;
  count(sessionId?: string): Promise<number>;
  /** Whether the table can be read, and why not. */
  available(): Promise<{ ok: true } | { ok: false; reason: string }>;
}

/** A build `record` made during a hold, not written yet. */
export interface HeldBuild {
  build: PromptBuild;
  insert: RidingInsert;
  /** The row id its insert answered: the prune check. */
  written(id: number): Promise<void>;
  /** Its insert made alone, as `record` would have (for a caller with nothing to write it with). */
  writeAlone(): Promise<void>;
}

/** A rough, tokenizer-free estimate (about four characters per token for English and code). */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);

/**
 * The hashes of recent texts: every run records its prompt's sections, and most are the same text
 * from run to run (a compat request is a run: the same prompt for every request of a workspace).
 */
const recentHashes = new Map<string, string>();
/** What the texts kept as keys may add up to (characters), so the memo stays ≈ 1 MB at most. */
const RECENT_CHARS = 512 * 1024;
let recentChars = 0;

export const sha256Prefix = (text: string, length = 16): string => {
  let hash = recentHashes.get(text);
  if (hash === undefined) {
    hash = createHash('sha256').update(text).digest('hex');
    if (recentChars + text.length > RECENT_CHARS) {
      recentHashes.clear();
      recentChars = 0;
    }
    if (text.length <= RECENT_CHARS / 4) {
      recentHashes.set(text, hash);
      recentChars += text.length;
    }
  }
  return hash.slice(0, length);
};

export function createPromptStackLedger(deps: {
  store: PromptStackStore;
  clock: Clock;
  ids: Ids;
}): PromptStackLedger {
  const { store } = deps;
  /** Every id up to this one is deleted (by this process; another's prunes only add to it). */
  let prunedThrough = 0;
  /** Runs whose builds are held (./prompt-stack.ts `hold`): the held build once recorded. */
  const held = new Map<string, HeldBuild | undefined>();
  /** Runs whose builds are held for an insert with no promise (`holdNow`): the held insert once recorded. */
  const heldNow = new Map<string, (() => Promise<void> | undefined) | undefined>();
  const written = async (id: number) => {
    if (id - PROMPT_STACK_RETENTION > prunedThrough) {
      const through = id - PROMPT_STACK_RETENTION + PROMPT_STACK_PRUNE_BATCH;
      await store.pruneThrough(through);
      prunedThrough = through;
    }
  };

  return {
    async record(input) {
      // Pushed, not mapped: TurboFan's inlined `map` answers a holey array, and reading its
      // `length` below would deopt the optimized `record` once (docs/performance-log.md, p-jit).
      const sections: PromptBuild['sections'] = [];
      for (const s of input.sections) {
        sections.push({
          name: s.name,
          source: s.source,
          chars: s.text.length,
          token_estimate: estimateTokens(s.text.length),
          sha256_prefix: sha256Prefix(s.text),
        });
      }
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
      const runId = input.runId;
      if (runId !== undefined && held.has(runId) && held.get(runId) === undefined && store.insertWrite) {
        held.set(runId, {
          build,
          insert: store.insertWrite(build),
          written,
          writeAlone: async () => written(await store.insert(build)),
        });
        return build;
      }
      const insertNow = store.insertNow;
      if (runId !== undefined && insertNow && heldNow.has(runId) && heldNow.get(runId) === undefined) {
        heldNow.set(runId, () => {
          const id = insertNow(build);
          return id - PROMPT_STACK_RETENTION > prunedThrough ? written(id) : undefined;
        });
        return build;
      }
      await written(await store.insert(build));
      return build;
    },
    holdNow(runId) {
      heldNow.set(runId, undefined);
      return () => {
        const insert = heldNow.get(runId);
        heldNow.delete(runId);
        return insert;
      };
    },
    hold(runId) {
      held.set(runId, undefined);
      return () => {
        const build = held.get(runId);
        held.delete(runId);
        return build;
      };
    },
    recent: async (options = {}) =>
      await store.recent({ sessionId: options.sessionId, limit: options.limit ?? 20 }),
    count: async (sessionId) => await store.count(sessionId),
    async available() {
      try {
        await store.probe();
        return { ok: true };
      } catch (error) {
        return { ok: false, reason: SvcError.is(error) ? error.message : String(error) };
      }
    },
  };
}
