/**
 * The walk over one parsed bash command (./bash-analysis.ts runs it and draws the verdict): every
 * simple command, redirect, substitution and expansion is classified into blocks (refused),
 * concerns (asked) and unverified writes (asked even under an allow rule; refused under --yolo
 * unless the OS sandbox contains the command).
 * @module
 */
import { isAbsolute, resolve } from 'node:path';
import type { Node } from 'web-tree-sitter';
import { realpathOfDeepest } from '../workspace/paths';
import {
  checkProtectedPath,
  checkProtectedWords,
  checkRecursiveRead,
  ENVIRON,
  type WalkContext,
} from './bash-protected';
import {
  catastrophicTarget,
  commandHead,
  DOWNLOADERS,
  INTERPRETERS,
  isReadOnly,
  matchesEntry,
  PRIVILEGED,
  positionals,
  readsEnvironment,
  SHELLS,
  unwrap,
  type Word,
  writeTargets,
} from './bash-rules';
import type { BashAnalysisOptions, Concern, Found } from './bash-types';
import { clip, expandedNames, firstCommandName, isAncestorOrSelf, isInside, wordValue } from './bash-words';
import { hiddenWrites } from './bash-writes';

const HARMLESS_DEVICES = /^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/;

export class Walker implements WalkContext {
  /** Variables the script itself sets (`for f in …`, `read x`, `X=…`): reading them is harmless. */
  private readonly defined = new Set<string>();
  /** The script may change globbing (`shopt -s dotglob`): `*` may match hidden names. */
  dotglob = false;

  constructor(
    readonly options: BashAnalysisOptions,
    private readonly found: Found,
    /** The simulated working directory; null once it is only known at run time. */
    private cwd: string | null,
  ) {}

  /** Collect what the script defines before walking it (a loop variable is read before its loop ends). */
  prescan(root: Node): void {
    this.dotglob = /\bshopt\b|GLOBIGNORE/.test(root.text);
    for (const node of root.descendantsOfType(['for_statement', 'variable_assignment'])) {
      const name = node?.childForFieldName(node.type === 'for_statement' ? 'variable' : 'name');
      if (name) this.defined.add(name.text);
    }
    for (const command of root.descendantsOfType('command')) {
      const name = command?.childForFieldName('name')?.text;
      if (name !== 'read' && name !== 'mapfile' && name !== 'readarray' && name !== 'getopts') continue;
      for (const arg of command?.childrenForFieldName('argument') ?? []) {
        if (arg && /^[A-Za-z_][A-Za-z0-9_]*$/.test(arg.text)) this.defined.add(arg.text);
      }
    }
  }

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
        this.children(node);
        return;
      case 'arithmetic_expansion':
      case 'expansion':
      case 'simple_expansion':
        this.expansion(node);
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
        this.declaration(node);
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

  concern(kind: Concern['kind'], text: string): void {
    if (!this.found.concerns.some((c) => c.text === text)) this.found.concerns.push({ kind, text });
  }

  block(reason: string): void {
    if (!this.found.blocks.includes(reason)) this.found.blocks.push(reason);
  }

  deny(denial: Found['denied'][number]): void {
    if (!this.found.denied.some((d) => d.path === denial.path)) this.found.denied.push(denial);
  }

  /** `$X`, `${X}`, `$((X))`, `${!prefix*}`: reading a variable that may hold a secret asks. */
  private expansion(node: Node): void {
    if (node.type === 'expansion' && node.text.startsWith('${!')) {
      this.concern('env', `lists or reads variables indirectly (${clip(node.text)})`);
      return;
    }
    const visible = this.options.visibleVariable;
    if (!visible) return;
    for (const name of expandedNames(node)) {
      // Positional and special parameters ($1, $@, $?) are the script's own.
      if (this.defined.has(name) || /^([0-9]+|[@*#?$!_-])$/.test(name) || visible(name)) continue;
      this.concern('env', `reads the environment variable ${name}, which may hold a secret`);
    }
  }

  private declaration(node: Node): void {
    if (node.type === 'declaration_command') {
      const argv = node.namedChildren.map((c) => (c ? (c.type === 'word' ? c.text : '=') : null));
      const reads = readsEnvironment([node.firstChild?.text ?? null, ...argv], []);
      if (reads) this.concern('env', reads);
    }
    this.concern('assignment', `changes shell variables (${clip(node.text)})`);
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

  simpleCommand(raw: Word[], display: string[]): void {
    const { argv, setsEnv, extraArgs, wrappers } = unwrap(raw);
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
    const reads = readsEnvironment(argv, wrappers);
    if (reads?.startsWith('ps e'))
      this.block(`${reads}, svc's own with its secrets among them; svc never runs it`);
    else if (reads) this.concern('env', `${reads}, which may hold secrets`);
    checkProtectedWords(this, argv);
    this.checkDanger(argv, extraArgs);
    this.trackCwd(argv);
    checkRecursiveRead(this, argv);

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
    if (!readOnly && !reads) this.concern('command', `${name} is not a read-only command`);
    this.found.commands.push({ argv, display, readOnly: readOnly && !reads, head: commandHead(argv) });
  }

  /** Block what would wreck the machine, the home directory or the workspace. */
  private checkDanger(argv: Word[], extraArgs: boolean): void {
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
    if (name === 'ln' || (name === 'cp' && literal.some((a) => /^-[a-zA-Z]*s/.test(a))))
      this.found.links = true;
    const targets = writeTargets(argv);
    if (targets) {
      this.found.writers = true;
      if (targets.dynamic || (extraArgs && targets.paths.length === 0))
        this.concern('dynamic', `cannot tell which paths ${name} changes until it runs`);
      for (const path of targets.paths) this.checkWrite(path, name);
    }
    const hidden = hiddenWrites(argv);
    for (const reason of hidden.unverified) this.concern('unverified', reason);
    for (const path of hidden.paths) {
      this.found.writers = true;
      this.concern('write', `${name} writes ${path}`);
      this.checkWrite(path, name);
    }
    for (const nested of hidden.nested)
      this.simpleCommand(
        nested,
        nested.map((w) => w ?? '{}'),
      );
  }

  checkWrite(path: string, by: string): void {
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
    checkProtectedPath(this, path, by);
    // Through a symlink the write lands where the link points: that is what must be inside.
    const real = realpathOfDeepest(abs);
    const via = real !== abs ? ` through a symlink to ${real}` : '';
    if (isInside(real, this.options.workspace)) return;
    if (
      this.options.allowOutsideWorkspace ||
      (this.options.scratchDirs ?? []).some((d) => isInside(real, d))
    ) {
      this.concern('outside', `${by} writes outside the workspace (${abs}${via})`);
      return;
    }
    this.block(
      `${by} writes outside the workspace (${abs}${via}); only paths inside ${this.options.workspace} may be changed` +
        ' (the user can allow a directory with options.sandbox.allow_write)',
    );
    this.deny({ kind: 'write_outside_workspace', path: real });
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
      if (value !== null) checkProtectedPath(this, value, 'a redirect');
      if (value !== null && ENVIRON.test(value))
        this.concern('env', `reads a process environment (${value})`);
      if (value !== null && !isInside(this.resolvePath(value) ?? '', this.options.workspace)) {
        if (!HARMLESS_DEVICES.test(value)) this.concern('outside', `reads ${value}, outside the workspace`);
      }
      return;
    }
    this.found.writers = true;
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

  resolvePath(path: string): string | null {
    let p = path;
    if (this.options.home && (p === '~' || p.startsWith('~/'))) p = this.options.home + p.slice(1);
    if (isAbsolute(p)) return resolve(p);
    if (this.cwd === null) return null;
    return resolve(this.cwd, p);
  }
}
