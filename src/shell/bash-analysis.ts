/**
 * Bash command analysis for permissions. The command is parsed with tree-sitter's bash grammar
 * (pipes, lists, subshells, redirects, substitutions, heredocs; never prefix matching) and every
 * simple command in it is classified:
 *
 * - `block`: refused outright with a reason (privilege escalation, `rm -rf /` or `~`, deleting
 *   the workspace, writes outside the workspace, raw devices, shutdown, fork bombs, downloads piped
 *   into a shell, `permissions.bash_deny`).
 * - `safe`: every command only reads (git status/diff/log, ls, cat, rg…), nothing is redirected to
 *   a file, no substitution or variable assignment, nothing outside the workspace is touched, and
 *   `permissions.auto_allow_read_only_bash` is on; or every command that is not read-only matches
 *   a `permissions.bash_allow` entry (word-prefix match on the parsed words).
 * - `ask`: anything else, including what could not be parsed (fail closed).
 * @module
 */

import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { parserFor } from '../workspace/tree-sitter';
import {
  catastrophicTarget,
  commandHead,
  DOWNLOADERS,
  INTERPRETERS,
  isReadOnly,
  matchesEntry,
  PRIVILEGED,
  positionals,
  SHELLS,
  unwrap,
  type Word,
  writeTargets,
} from './bash-rules';

export type BashVerdict = 'safe' | 'ask' | 'block';

export interface BashAnalysisOptions {
  /** Workspace root (real path). */
  workspace: string;
  /** Directory the command starts in. */
  cwd: string;
  home?: string;
  /** Directories outside the workspace that may be written after asking (the OS temp dir). */
  scratchDirs?: string[];
  allowOutsideWorkspace?: boolean;
  autoAllowReadOnly?: boolean;
  bashAllow?: string[];
  bashDeny?: string[];
}

export interface AnalyzedCommand {
  /** The words, with run-time values shown as written (`$HOME`). */
  argv: string[];
  read_only: boolean;
}

export interface BashAnalysis {
  verdict: BashVerdict;
  /** One sentence for the prompt, the log and the model. */
  reason: string;
  /** Every command only reads and nothing is written. */
  read_only: boolean;
  /** `permissions.bash_allow` entries that allowed the commands that are not read-only. */
  allowed_by: string[];
  commands: AnalyzedCommand[];
  /** Files written by redirects and file-changing commands (as resolved, when known). */
  writes: string[];
  /** Why the command is not read-only (empty when it is). */
  concerns: string[];
  /** Stable key for a session-wide grant: `bash:git commit`, `bash:npm run build && rm`. */
  scope: string;
}

interface Concern {
  /** `command` concerns can be lifted by bash_allow; the others cannot. */
  kind: 'command' | 'write' | 'substitution' | 'assignment' | 'parse' | 'outside' | 'dynamic' | 'construct';
  text: string;
}

interface Found {
  commands: { argv: Word[]; display: string[]; readOnly: boolean; head: string }[];
  concerns: Concern[];
  blocks: string[];
  writes: string[];
  nested: { command: string; cwd: string | null }[];
}

const HARMLESS_DEVICES = /^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/;
const MAX_NESTING = 3;

export async function analyzeBash(command: string, options: BashAnalysisOptions): Promise<BashAnalysis> {
  const found: Found = { commands: [], concerns: [], blocks: [], writes: [], nested: [] };
  await analyzeInto(command, options, options.cwd, found, 0);
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

class Walker {
  constructor(
    private readonly options: BashAnalysisOptions,
    private readonly found: Found,
    /** The simulated working directory; null once it is only known at run time. */
    private cwd: string | null,
  ) {}

  visit(node: Node): void {
    if (node.isError || node.isMissing) {
      this.concern('parse', 'part of the command could not be parsed');
    }
    switch (node.type) {
      case 'program':
      case 'list':
      case 'compound_statement':
      case 'subshell':
      case 'redirected_statement':
      case 'negated_command':
      case 'if_statement':
      case 'elif_clause':
      case 'else_clause':
      case 'while_statement':
      case 'for_statement':
      case 'case_statement':
      case 'case_item':
      case 'do_group':
      case 'test_command':
      case 'binary_expression':
      case 'unary_expression':
      case 'parenthesized_expression':
      case 'string':
      case 'concatenation':
      case 'heredoc_body':
      case 'herestring_redirect':
      case 'arithmetic_expansion':
      case 'expansion':
      case 'simple_expansion':
        this.children(node);
        return;
      case 'comment':
      case 'word':
      case 'raw_string':
      case 'string_content':
      case 'number':
      case 'variable_name':
      case 'heredoc_start':
      case 'heredoc_end':
      case 'heredoc_content':
      case 'file_descriptor':
      case 'special_variable_name':
      case 'ansi_c_string':
      case 'regex':
      case 'extglob_pattern':
        return;
      case 'pipeline':
        this.checkPipeline(node);
        this.children(node);
        return;
      case 'command':
        this.command(node);
        return;
      case 'command_substitution':
      case 'process_substitution':
        this.concern('substitution', `runs a ${node.type.replace('_', ' ')} (${clip(node.text)})`);
        this.children(node);
        return;
      case 'file_redirect':
        this.redirect(node);
        return;
      case 'heredoc_redirect':
        this.children(node);
        return;
      case 'variable_assignment':
      case 'declaration_command':
      case 'unset_command':
        this.concern('assignment', `changes shell variables (${clip(node.text)})`);
        this.children(node);
        return;
      case 'function_definition':
        this.functionDefinition(node);
        this.children(node);
        return;
      default:
        if (node.isNamed) this.concern('construct', `uses a ${node.type.replace(/_/g, ' ')}`);
        this.children(node);
        return;
    }
  }

  private children(node: Node): void {
    for (const child of node.namedChildren) if (child) this.visit(child);
  }

  private concern(kind: Concern['kind'], text: string): void {
    if (!this.found.concerns.some((c) => c.text === text)) this.found.concerns.push({ kind, text });
  }

  private block(reason: string): void {
    if (!this.found.blocks.includes(reason)) this.found.blocks.push(reason);
  }

  private command(node: Node): void {
    const words: Word[] = [];
    const display: string[] = [];
    for (const child of node.namedChildren) {
      if (!child) continue;
      if (child.type === 'variable_assignment') {
        this.concern('assignment', `sets environment variables for the command (${clip(child.text)})`);
        this.children(child);
        continue;
      }
      if (
        child.type === 'file_redirect' ||
        child.type === 'herestring_redirect' ||
        child.type === 'heredoc_redirect'
      ) {
        this.visit(child);
        continue;
      }
      const target = child.type === 'command_name' ? (child.namedChildren[0] ?? child) : child;
      words.push(wordValue(target, this.options.home));
      display.push(target.text);
      this.visit(target);
    }
    if (words.length === 0) return;
    this.simpleCommand(words, display);
  }

  private simpleCommand(raw: Word[], display: string[]): void {
    const { argv, setsEnv, extraArgs } = unwrap(raw);
    const name = argv[0];
    for (const entry of this.options.bashDeny ?? []) {
      if (matchesEntry(raw, entry) || matchesEntry(argv, entry)) {
        this.block(`"${display.join(' ')}" matches permissions.bash_deny entry "${entry}"`);
      }
    }
    if (setsEnv) this.concern('assignment', `sets environment variables for ${name ?? 'the command'}`);
    if (name === null) {
      this.concern('dynamic', `the command name is only known at run time (${display[0]})`);
      this.found.commands.push({ argv, display, readOnly: false, head: '?' });
      return;
    }
    if (PRIVILEGED.has(name)) {
      this.block(
        `"${name}" runs commands with elevated privileges; svc does not run privileged commands (run it yourself)`,
      );
    }
    this.checkDanger(argv);
    this.trackCwd(argv);

    // Interpreters given a literal script string are analysed like the outer command.
    if ((SHELLS.has(name) && argv[1] === '-c') || name === 'eval') {
      const script = name === 'eval' ? argv.slice(1) : [argv[2]];
      if (script.every((w) => w !== null && w !== undefined)) {
        this.found.nested.push({ command: (script as string[]).join(' '), cwd: this.cwd });
      } else {
        this.concern('dynamic', `${name} runs a script only known at run time`);
      }
    }

    let readOnly = !extraArgs || argv.every((w) => w !== null) ? isReadOnly(argv) : false;
    if (extraArgs && readOnly && !isReadOnly([...argv, null])) readOnly = false;
    const outside = readOnly ? this.readsOutside(argv) : undefined;
    if (outside) {
      readOnly = false;
      this.concern('outside', outside);
    }
    if (!readOnly) this.concern('command', `${name} is not a read-only command`);
    this.found.commands.push({ argv, display, readOnly, head: commandHead(argv) });
  }

  /** Block what would wreck the machine, the home directory or the workspace. */
  private checkDanger(argv: Word[]): void {
    const [name, ...args] = argv;
    if (name === null || name === undefined) return;
    const literal = args.filter((a): a is string => a !== null);
    if (name === 'rm') {
      const recursive = literal.some((a) => /^-[a-zA-Z]*[rR]/.test(a) || a === '--recursive');
      if (literal.includes('--no-preserve-root')) this.block('rm --no-preserve-root is never run');
      if (recursive) {
        for (const target of positionals(args)) {
          if (target === null) continue;
          const what = catastrophicTarget(target, this.options.home);
          if (what) this.block(`"rm -r ${target}" would delete ${what}`);
          const abs = this.resolvePath(target);
          if (abs && isAncestorOrSelf(abs, this.options.workspace)) {
            this.block(`"rm -r ${target}" would delete the whole workspace`);
          }
        }
      }
    }
    if (/^mkfs(\.|$)/.test(name) || ['fdisk', 'parted', 'wipefs', 'sfdisk', 'mkswap'].includes(name)) {
      this.block(`"${name}" formats or repartitions disks`);
    }
    if (
      ['shutdown', 'reboot', 'halt', 'poweroff'].includes(name) ||
      (name === 'init' && /^[06]$/.test(literal[0] ?? ''))
    ) {
      this.block(`"${name}" would shut down or restart the machine`);
    }
    if (name === 'kill') {
      // `kill -9 -1` / `kill -- -1` target every process; `kill -1 1234` only sends SIGHUP to 1234.
      let i = 0;
      if (literal[0] === '-s' || literal[0] === '-n') i = 2;
      else if (literal[0] && /^-([A-Za-z]+|\d+)$/.test(literal[0]) && literal.length > 1) i = 1;
      if (literal[i] === '--') i++;
      if (literal.slice(i).includes('-1')) this.block('"kill -1" would kill every process you own');
    }
    const targets = writeTargets(argv);
    if (targets) {
      if (targets.dynamic) this.concern('dynamic', `cannot tell which paths ${name} changes until it runs`);
      for (const path of targets.paths) this.checkWrite(path, name);
    }
  }

  private checkWrite(path: string, by: string): void {
    if (HARMLESS_DEVICES.test(path)) return;
    const abs = this.resolvePath(path);
    if (abs === null) {
      this.concern(
        'dynamic',
        `${by} writes ${path}, which is relative to a directory only known at run time`,
      );
      return;
    }
    this.found.writes.push(abs);
    if (abs.startsWith('/dev/')) {
      this.block(`${by} writes to the device ${abs}`);
      return;
    }
    if (isInside(abs, this.options.workspace)) return;
    if (
      this.options.allowOutsideWorkspace ||
      (this.options.scratchDirs ?? []).some((d) => isInside(abs, d))
    ) {
      this.concern('outside', `${by} writes outside the workspace (${abs})`);
      return;
    }
    this.block(
      `${by} writes outside the workspace (${abs}); only paths inside ${this.options.workspace} may be changed`,
    );
  }

  private redirect(node: Node): void {
    const operator = node.children.find((c) => c && !c.isNamed)?.type ?? '>';
    const destination = node.childForFieldName('destination') ?? node.namedChildren.at(-1) ?? null;
    if (destination) this.visit(destination);
    if (!destination) return;
    const isDup = (operator === '>&' || operator === '<&') && /^(\d+|-)$/.test(destination.text);
    if (isDup) return;
    const value = wordValue(destination, this.options.home);
    if (operator === '<' || operator === '<&') {
      if (value !== null && !isInside(this.resolvePath(value) ?? '', this.options.workspace)) {
        if (!HARMLESS_DEVICES.test(value)) this.concern('outside', `reads ${value}, outside the workspace`);
      }
      return;
    }
    if (value === null) {
      this.concern('dynamic', `redirects output to a path only known at run time (${destination.text})`);
      return;
    }
    if (HARMLESS_DEVICES.test(value)) return;
    this.concern('write', `redirects output to ${value}`);
    this.checkWrite(value, 'a redirect');
  }

  private checkPipeline(node: Node): void {
    const stages = node.namedChildren.filter((c): c is Node => c !== null);
    let downloaded = false;
    for (const stage of stages) {
      const name = firstCommandName(stage, this.options.home);
      if (name && DOWNLOADERS.has(name)) downloaded = true;
      else if (downloaded && name && INTERPRETERS.has(name)) {
        this.block(
          `pipes downloaded content into ${name} ("${clip(node.text)}"); download it to a file, read it, then run it`,
        );
      }
    }
  }

  private functionDefinition(node: Node): void {
    const name = node.namedChildren[0]?.text;
    const body = node.namedChildren.at(-1);
    if (!name || !body) return;
    const calls = body.descendantsOfType('command_name').filter((n) => n?.text === name);
    if (calls.length >= 2 && body.descendantsOfType('pipeline').length > 0) {
      this.block(`"${clip(node.text)}" is a fork bomb`);
    }
    this.concern('construct', `defines a shell function (${name})`);
  }

  private trackCwd(argv: Word[]): void {
    const [name, target] = argv;
    if (name !== 'cd' && name !== 'pushd' && name !== 'popd') return;
    if (name === 'popd' || target === null || target === '-') {
      this.cwd = null;
      return;
    }
    if (target === undefined) {
      this.cwd = this.options.home ?? null;
      return;
    }
    this.cwd = this.resolvePath(target);
  }

  /** Why a read-only command reaches outside the workspace, if it does. */
  private readsOutside(argv: Word[]): string | undefined {
    const [name, ...args] = argv;
    if (name === 'cd' || name === 'pushd') return undefined;
    if (this.cwd === null) return `${name} runs in a directory only known at run time`;
    if (!isInside(this.cwd, this.options.workspace))
      return `${name} runs outside the workspace (in ${this.cwd})`;
    if (name === 'echo' || name === 'printf') return undefined;
    let pos = positionals(args);
    if (
      (name === 'grep' || name === 'rg' || name === 'egrep' || name === 'fgrep') &&
      !args.some((a) => a === '-e' || a === '-f')
    )
      pos = pos.slice(1);
    const outside = pos.find((p) => {
      if (p === null) return false;
      if (
        !(p.startsWith('/') || p.startsWith('~') || p === '..' || p.startsWith('../') || p.includes('/../'))
      )
        return false;
      const abs = this.resolvePath(p);
      return abs === null || !isInside(abs, this.options.workspace);
    });
    return outside ? `${name} reads ${outside}, outside the workspace` : undefined;
  }

  private resolvePath(path: string): string | null {
    let p = path;
    if (this.options.home && (p === '~' || p.startsWith('~/'))) p = this.options.home + p.slice(1);
    if (isAbsolute(p)) return resolve(p);
    if (this.cwd === null) return null;
    return resolve(this.cwd, p);
  }
}

function verdictOf(found: Found, options: BashAnalysisOptions): BashAnalysis {
  const commands = found.commands.map((c) => ({ argv: c.display, read_only: c.readOnly }));
  const heads = [...new Set(found.commands.filter((c) => !c.readOnly).map((c) => c.head))];
  const scope = `bash:${(heads.length ? heads : [...new Set(found.commands.map((c) => c.head))]).join(' && ')}`;
  const concerns = found.concerns.map((c) => c.text);
  const base = { commands, writes: [...new Set(found.writes)], concerns, scope };
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

function summary(found: Found): string {
  return [...new Set(found.commands.map((c) => c.head))].join(', ');
}

/** The literal value of a word, or null when it depends on run-time state. */
export function wordValue(node: Node, home: string | undefined): Word {
  switch (node.type) {
    case 'word': {
      const text = node.text.replace(/\\(.)/g, '$1');
      if (home && (text === '~' || text.startsWith('~/'))) return home + text.slice(1);
      return text;
    }
    case 'number':
      return node.text;
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string': {
      let out = '';
      for (const child of node.namedChildren) {
        if (!child) continue;
        const value =
          child.type === 'string_content'
            ? child.text.replace(/\\([$`"\\\n])/g, '$1')
            : wordValue(child, home);
        if (value === null) return null;
        out += value;
      }
      return out;
    }
    case 'simple_expansion':
    case 'expansion': {
      // $HOME is the one variable worth resolving: `rm -rf $HOME` must be recognised.
      const names = node.namedChildren.filter((c) => c !== null);
      if (home && names.length === 1 && names[0]?.type === 'variable_name' && names[0].text === 'HOME')
        return home;
      return null;
    }
    case 'concatenation': {
      let out = '';
      for (const child of node.namedChildren) {
        if (!child) continue;
        const value = wordValue(child, home);
        if (value === null) return null;
        out += value;
      }
      return out;
    }
    default:
      return null;
  }
}

function firstCommandName(node: Node, home: string | undefined): string | undefined {
  const command = node.type === 'command' ? node : node.descendantsOfType('command')[0];
  const nameNode = command?.childForFieldName('name')?.namedChildren[0];
  if (!nameNode) return undefined;
  const value = wordValue(nameNode, home);
  if (value === null) return undefined;
  // Look through wrappers (`sudo sh`, `env sh`) to the program that reads the pipe.
  const words = [
    value,
    ...(command?.namedChildren.slice(1).map((c) => (c ? wordValue(c, home) : null)) ?? []),
  ];
  return unwrap(words.filter((w) => w !== null && !PRIVILEGED.has(w ?? ''))).argv[0] ?? value;
}

function isInside(abs: string, root: string): boolean {
  const rel = relative(root, abs);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function isAncestorOrSelf(abs: string, root: string): boolean {
  return abs === root || isInside(root, abs);
}

function clip(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
