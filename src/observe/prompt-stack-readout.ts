/**
 * Read models over the prompt stack ledger: `get_prompt_stack_status` (sizes, sections, and how
 * stable the prompt stays between consecutive builds of a session — a changed prefix defeats
 * provider prompt caches) and `list_recent_prompt_stack_builds`.
 * @module
 */
import type { SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import { PROMPT_STACK_RETENTION, type PromptBuild } from './prompt-stack';
import type { ObserveService } from './service';
import { distribution } from './session-scope';

export interface PromptStackReadoutDeps {
  readonly observe: Pick<ObserveService, 'promptStack'>;
  readonly sessions: Pick<SessionStore, 'get'>;
  readonly clock: Clock;
}

/** Builds the status readout looks at (newest first). */
export const STATUS_WINDOW = 200;

const RECORDS =
  'metadata of every system-prompt assembly: section names, sources, sizes, token estimates (chars / 4) and sha256 prefixes; never the text';

async function recording(app: PromptStackReadoutDeps) {
  const available = await app.observe.promptStack.available();
  return {
    available: available.ok,
    reason: available.ok ? null : available.reason,
    table: 'prompt_stack_builds',
    retention_max_builds: PROMPT_STACK_RETENTION,
    records: RECORDS,
  };
}

async function scopeOf(app: PromptStackReadoutDeps, sessionId: string | undefined) {
  const warnings: string[] = [];
  if (sessionId && !(await app.sessions.get(sessionId)))
    warnings.push(`session_unknown: no session "${sessionId}"; see list_sessions`);
  return { session_id: sessionId ?? null, warnings };
}

export async function promptStackStatus(app: PromptStackReadoutDeps, input: { session_id?: string }) {
  const rec = await recording(app);
  const scope = await scopeOf(app, input.session_id);
  const base = { generated_at: app.clock.now(), recording: rec, scope: { session_id: scope.session_id } };
  if (!rec.available) {
    return {
      ...base,
      builds: { total: 0, window: 0, first_at: null, last_at: null },
      last_build: null,
      size: null,
      sections: [],
      stability: null,
      warnings: [...scope.warnings, `prompt_stack_unavailable: ${rec.reason}`],
    };
  }
  const ledger = app.observe.promptStack;
  const total = await ledger.count(input.session_id);
  const window = await ledger.recent({ sessionId: input.session_id, limit: STATUS_WINDOW });
  const chronological = [...window].reverse();
  const chars = distribution(window.map((b) => b.total_chars));
  const tokens = distribution(window.map((b) => b.token_estimate));

  const sections = new Map<
    string,
    { name: string; source: string; builds: number; chars: number[]; versions: Set<string>; last: number }
  >();
  for (const build of chronological) {
    for (const section of build.sections) {
      const key = `${section.name}\u0000${section.source}`;
      const entry = sections.get(key) ?? {
        name: section.name,
        source: section.source,
        builds: 0,
        chars: [],
        versions: new Set<string>(),
        last: 0,
      };
      sections.set(key, entry);
      entry.builds++;
      entry.chars.push(section.chars);
      entry.versions.add(section.sha256_prefix);
      entry.last = section.chars;
    }
  }

  const stability = stabilityOf(chronological);
  const warnings = [...scope.warnings];
  if (total === 0) warnings.push('no_builds_yet: no prompt has been assembled in this scope');
  return {
    ...base,
    builds: {
      total,
      window: window.length,
      first_at: chronological[0]?.created_at ?? null,
      last_at: window[0]?.created_at ?? null,
    },
    last_build: window[0] ?? null,
    size: {
      chars: { avg: chars.avg, p50: chars.p50, max: chars.max },
      token_estimate: { avg: tokens.avg, p50: tokens.p50, max: tokens.max },
    },
    sections: [...sections.values()].map((s) => ({
      name: s.name,
      source: s.source,
      builds: s.builds,
      last_chars: s.last,
      avg_chars: distribution(s.chars).avg,
      distinct_versions: s.versions.size,
    })),
    stability,
    warnings,
  };
}

/** Consecutive builds of the same session: did the prompt change, and which sections did. */
function stabilityOf(chronological: PromptBuild[]) {
  const previous = new Map<string, PromptBuild>();
  let compared = 0;
  let unchanged = 0;
  const changedSections: Record<string, number> = {};
  for (const build of chronological) {
    const key = build.session_id ?? '';
    const before = previous.get(key);
    previous.set(key, build);
    if (!before) continue;
    compared++;
    if (before.sha256_prefix === build.sha256_prefix) {
      unchanged++;
      continue;
    }
    const old = new Map(before.sections.map((s) => [`${s.name}\u0000${s.source}`, s.sha256_prefix]));
    for (const section of build.sections) {
      if (old.get(`${section.name}\u0000${section.source}`) !== section.sha256_prefix)
        changedSections[section.name] = (changedSections[section.name] ?? 0) + 1;
    }
  }
  return {
    compared_pairs: compared,
    unchanged_pairs: unchanged,
    changed_pairs: compared - unchanged,
    changed_sections: changedSections,
  };
}

export async function recentPromptStackBuilds(
  app: PromptStackReadoutDeps,
  input: { session_id?: string; limit: number },
) {
  const rec = await recording(app);
  const scope = await scopeOf(app, input.session_id);
  if (!rec.available) {
    return {
      generated_at: app.clock.now(),
      scope: { session_id: scope.session_id },
      filters_applied: { limit: input.limit },
      total: 0,
      builds: [] as PromptBuild[],
      warnings: [...scope.warnings, `prompt_stack_unavailable: ${rec.reason}`],
    };
  }
  const builds = await app.observe.promptStack.recent({ sessionId: input.session_id, limit: input.limit });
  return {
    generated_at: app.clock.now(),
    scope: { session_id: scope.session_id },
    filters_applied: { limit: input.limit },
    total: await app.observe.promptStack.count(input.session_id),
    builds,
    warnings: scope.warnings,
  };
}
