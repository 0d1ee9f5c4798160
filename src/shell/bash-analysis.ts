/**
 * Bash command analysis for permissions. The command is parsed with tree-sitter's bash grammar
 * (pipes, lists, subshells, redirects, substitutions, heredocs; never prefix matching) and every
 * simple command in it is classified (./bash-walker.ts):
 *
 * - `block`: refused outright with a reason (privilege escalation, `rm -rf /` or `~`, deleting
 *   the workspace, writes outside the workspace, any path into svc's data directory, credential
 *   store or the deny list, raw devices, shutdown, fork bombs, downloads piped into a shell,
 *   `permissions.bash_deny`).
 * - `safe`: every command only reads (git status/diff/log, ls, cat, rg…), nothing is redirected to
 *   a file, no substitution or variable assignment, nothing outside the workspace is touched, no
 *   environment is read, and `permissions.auto_allow_read_only_bash` is on; or every command that
 *   is not read-only matches a `permissions.bash_allow` entry (word-prefix match on the parsed
 *   words).
 * - `ask`: anything else, including what could not be parsed (fail closed).
 *
 * `unverified_writes` lists why a write's target cannot be known before the command runs
 * (variables, substitutions, interpreters, `sed w`, `awk >`, `find -fprint`, a link then a
 * write…): without the OS sandbox such a command asks even under an allow rule and is refused
 * under --yolo (src/workspace/shell.ts, src/permissions).
 * @module
 */
import { parserFor } from '../workspace/tree-sitter';
import { matchesEntry } from './bash-rules';
import type { BashAnalysis, BashAnalysisOptions, Concern, Found } from './bash-types';
import { Walker } from './bash-walker';

export type {
  AnalyzedCommand,
  BashAnalysis,
  BashAnalysisOptions,
  BashVerdict,
  Concern,
  Found,
  ProtectedEntry,
} from './bash-types';

const MAX_NESTING = 3;
/** What makes a command unverifiable without the OS sandbox (refused under --yolo there). */
const UNVERIFIED: readonly Concern['kind'][] = ['dynamic', 'unverified', 'parse', 'protected'];

export async function analyzeBash(command: string, options: BashAnalysisOptions): Promise<BashAnalysis> {
  const found: Found = { commands: [], concerns: [], blocks: [], writes: [], nested: [], denied: [] };
  await analyzeInto(command, options, options.cwd, found, 0);
  checkEnviron(command, found);
  if (found.links && found.writers) {
    found.concerns.push({
      kind: 'unverified',
      text: 'creates a link and writes in the same command: a write may land outside the workspace through the link',
    });
  }
  return verdictOf(found, options);
}

async function analyzeInto(
  command: string,
  options: BashAnalysisOptions,
  cwd: string | null,
  found: Found,
  depth: number,
): Promise<void> {
  if (command.trim() === '') return;
  const parser = await parserFor('bash');
  const tree = parser.parse(command);
  if (!tree) {
    found.concerns.push({ kind: 'parse', text: 'the command could not be parsed' });
    return;
  }
  try {
    const walker = new Walker(options, found, cwd);
    walker.prescan(tree.rootNode);
    walker.visit(tree.rootNode);
  } finally {
    tree.delete();
  }
  const nested = found.nested.splice(0);
  for (const inner of nested) {
    if (depth + 1 > MAX_NESTING) {
      found.concerns.push({ kind: 'construct', text: 'shell commands nested too deeply to analyse' });
      continue;
    }
    await analyzeInto(inner.command, options, inner.cwd, found, depth + 1);
  }
}

function verdictOf(found: Found, options: BashAnalysisOptions): BashAnalysis {
  const commands = found.commands.map((c) => ({ argv: c.display, read_only: c.readOnly }));
  const heads = [...new Set(found.commands.filter((c) => !c.readOnly).map((c) => c.head))];
  const scope = `bash:${(heads.length ? heads : [...new Set(found.commands.map((c) => c.head))]).join(' && ')}`;
  const concerns = found.concerns.map((c) => c.text);
  const unverified = found.concerns.filter((c) => UNVERIFIED.includes(c.kind)).map((c) => c.text);
  const base = {
    commands,
    writes: [...new Set(found.writes)],
    concerns,
    unverified_writes: unverified,
    denied: found.blocks.length ? found.denied : [],
    scope,
  };
  if (found.blocks.length > 0) {
    return {
      ...base,
      verdict: 'block',
      reason: `blocked: ${found.blocks[0]}`,
      read_only: false,
      allowed_by: [],
    };
  }
  const readOnly = found.concerns.length === 0 && found.commands.length > 0;
  if (readOnly) {
    return options.autoAllowReadOnly === false
      ? {
          ...base,
          verdict: 'ask',
          reason: 'read-only, but permissions.auto_allow_read_only_bash is off',
          read_only: true,
          allowed_by: [],
        }
      : {
          ...base,
          verdict: 'safe',
          reason: `read-only: ${heads.length ? heads.join(', ') : summary(found)}`,
          read_only: true,
          allowed_by: [],
        };
  }
  // bash_allow lifts "not a read-only command" only; writes, substitutions and the rest still ask.
  const blocking = found.concerns.filter((c) => c.kind !== 'command');
  const allowedBy: string[] = [];
  const allAllowed =
    blocking.length === 0 &&
    found.commands.every((c) => {
      if (c.readOnly) return true;
      const entry = (options.bashAllow ?? []).find((e) => matchesEntry(c.argv, e));
      if (entry && !allowedBy.includes(entry)) allowedBy.push(entry);
      return entry !== undefined;
    });
  if (allAllowed && allowedBy.length > 0) {
    return {
      ...base,
      verdict: 'safe',
      reason: `allowed by permissions.bash_allow (${allowedBy.join(', ')})`,
      read_only: false,
      allowed_by: allowedBy,
    };
  }
  return {
    ...base,
    verdict: 'ask',
    reason: concerns[0] ?? 'the command does nothing svc can classify',
    read_only: false,
    allowed_by: [],
  };
}

/**
 * Another process's environment (`/proc/<pid>/environ`, `ps e`) may be svc's own, with every
 * secret svc was started with (the scrubbed one is the command's own, /proc/self/environ). Read
 * off the text, so no construction hides it (a loop over /proc, `/proc/$PPID/environ`).
 */
function checkEnviron(command: string, found: Found): void {
  if (!/\/proc\b/.test(command) || !/environ/.test(command)) return;
  const others = command.replace(/\/proc\/self\/(task\/[^/\s]+\/)?environ\b/g, '');
  if (/\/proc\b/.test(others) && /environ/.test(others)) {
    const reason =
      "reads another process's environment (/proc/<pid>/environ), which may be svc's own with its secrets; svc never runs it";
    if (!found.blocks.includes(reason)) found.blocks.push(reason);
  }
}

function summary(found: Found): string {
  return [...new Set(found.commands.map((c) => c.head))].join(', ');
}
