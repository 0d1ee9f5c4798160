/**
 * Writes hidden inside a command's own language (issue 15, item 3): a sed script's `w` command,
 * an awk program's `print > file`, a find action, inline interpreter code, programs that read
 * code from stdin. Each either names its target (checked like any other write) or cannot be
 * verified before it runs (`unverified`: asks even under an allow rule, refused under --yolo
 * unless the OS sandbox contains it).
 * @module
 */
import { positionals, SHELLS, type Word } from './bash-rules';

export interface HiddenWrites {
  /** Literal targets, checked like redirects. */
  paths: string[];
  /** Why the command may write somewhere nobody can tell before it runs. */
  unverified: string[];
  /** Commands find runs (`-exec cmd {} ;`), analysed like the outer command; `{}` is null. */
  nested: Word[][];
}

/** Programs that run code: inline (`-c`, `-e`), from a file, or from stdin. */
// biome-ignore format: a packed table reads better
export const CODE_RUNNERS = new Set([
  'python', 'python2', 'python3', 'node', 'nodejs', 'deno', 'bun', 'perl', 'ruby', 'php', 'lua', 'luajit',
  'Rscript', 'osascript', 'tclsh', 'pwsh', 'powershell', 'julia', 'groovy', 'jshell', 'irb', 'ts-node', 'tsx',
  ...SHELLS, 'source', '.',
]);

const INLINE = /^(-c|-e|-E|-r|-p|--eval|--print|--command|-Command|eval|-x)$/;

export function hiddenWrites(argv: Word[]): HiddenWrites {
  const out: HiddenWrites = { paths: [], unverified: [], nested: [] };
  const [name, ...args] = argv;
  if (name === null || name === undefined) return out;
  if (name === 'sed') sedWrites(args, out);
  else if (name === 'awk' || name === 'gawk' || name === 'mawk' || name === 'nawk') awkWrites(args, out);
  else if (name === 'find') findWrites(args, out);
  else if (CODE_RUNNERS.has(name)) codeRunner(name, args, out);
  return out;
}

function codeRunner(name: string, args: Word[], out: HiddenWrites): void {
  if (args.length === 1 && /^(--version|-v|-V|--help|-h)$/.test(args[0] ?? '')) return;
  // bash -c '<literal>' is parsed and analysed as a command of its own (bash-walker.ts).
  if (SHELLS.has(name) && args[0] === '-c' && args[1] !== null && args[1] !== undefined) return;
  const inline = args.some((a) => a !== null && INLINE.test(a));
  const script = positionals(args).find((a) => a !== '-');
  if (inline) out.unverified.push(`${name} runs inline code, which may write anywhere`);
  else if (script === undefined)
    out.unverified.push(`${name} runs code read from its input, which may write anywhere`);
  else out.unverified.push(`${name} runs ${script ?? 'a script'}, which may write anywhere`);
}

/** sed: the `w`/`W` commands and the `w` flag of `s` write files; `e` runs a command. */
function sedWrites(args: Word[], out: HiddenWrites): void {
  const scripts: Word[] = [];
  let i = 0;
  let explicit = false;
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === '-e' || a === '--expression') {
      scripts.push(args[++i] ?? null);
      explicit = true;
    } else if (a?.startsWith('--expression=')) {
      scripts.push(a.slice(13));
      explicit = true;
    } else if (a === '-f' || a === '--file' || a?.startsWith('--file=')) {
      out.unverified.push('sed runs a script file, which may write files (w)');
      return;
    }
  }
  if (!explicit) scripts.push(positionals(args)[0] ?? null);
  for (const script of scripts) {
    if (script === null) {
      out.unverified.push('sed runs a script only known at run time, which may write files (w)');
      continue;
    }
    const scan = scanSed(script);
    if (scan === 'unknown')
      out.unverified.push('sed runs a script svc cannot read fully, which may write files');
    else {
      for (const target of scan.writes) out.paths.push(target);
      if (scan.executes) out.unverified.push('sed runs commands from its script (e)');
    }
  }
}

/** The files a sed script writes, or 'unknown' when it cannot be read. */
export function scanSed(script: string): { writes: string[]; executes: boolean } | 'unknown' {
  const writes: string[] = [];
  let executes = false;
  let i = 0;
  const n = script.length;
  const skipSpace = () => {
    while (i < n && /[ \t;\n]/.test(script[i])) i++;
  };
  const toLineEnd = () => {
    const end = script.indexOf('\n', i);
    const text = script.slice(i, end === -1 ? n : end).trim();
    i = end === -1 ? n : end + 1;
    return text;
  };
  const delimited = (delimiter: string) => {
    while (i < n && script[i] !== delimiter) {
      if (script[i] === '\\') i++;
      i++;
    }
    if (i >= n) return false;
    i++;
    return true;
  };
  for (let guard = 0; i < n && guard < 10_000; guard++) {
    skipSpace();
    if (i >= n) break;
    // Addresses: numbers, $, /regex/, \cregexc, ranges, steps, negation.
    while (i < n && /[0-9$,~+!/\\ ]/.test(script[i])) {
      if (script[i] === '/') {
        i++;
        if (!delimited('/')) return 'unknown';
      } else if (script[i] === '\\') {
        const d = script[i + 1];
        i += 2;
        if (!d || !delimited(d)) return 'unknown';
      } else i++;
    }
    const c = script[i++];
    if (c === undefined) break;
    if (c === '{' || c === '}' || c === '=' || /[dDgGhHlnNpPqQxz]/.test(c)) continue;
    if (c === '#' || c === ':' || /[btT]/.test(c)) {
      const end = script.slice(i).search(/[;\n]/);
      i = end === -1 ? n : i + end + 1;
      continue;
    }
    if (c === 'a' || c === 'i' || c === 'c' || c === 'r' || c === 'R') {
      toLineEnd();
      continue;
    }
    if (c === 'w' || c === 'W') {
      writes.push(toLineEnd());
      continue;
    }
    if (c === 'e') {
      executes = true;
      toLineEnd();
      continue;
    }
    if (c === 's' || c === 'y') {
      const d = script[i++];
      if (!d || /[\n\\]/.test(d)) return 'unknown';
      if (!delimited(d) || !delimited(d)) return 'unknown';
      if (c === 'y') continue;
      while (i < n && /[gpiImMe0-9]/.test(script[i])) {
        if (script[i] === 'e') executes = true;
        i++;
      }
      if (script[i] === 'w') {
        i++;
        writes.push(toLineEnd());
      }
      continue;
    }
    return 'unknown';
  }
  return { writes, executes };
}

/** awk: `print > file`, `printf … >> file`, pipes and `system()` write or run things. */
function awkWrites(args: Word[], out: HiddenWrites): void {
  let program: Word | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '-f' || a?.startsWith('--file')) {
      out.unverified.push('awk runs a program file, which may write files');
      return;
    }
    if (a === '-v' || a === '-F') {
      i++;
      continue;
    }
    if (a?.startsWith('-') && a !== '-') continue;
    program = a;
    break;
  }
  if (program === undefined) return;
  if (program === null) {
    out.unverified.push('awk runs a program only known at run time, which may write files');
    return;
  }
  // Strip string literals and regexes so a `>` in them does not count.
  const code = program.replace(/"(\\.|[^"\\])*"/g, '""').replace(/\/(\\.|[^/\\\n])+\//g, '//');
  if (/\b(print|printf)\b[^;{}]*(>|\|)/.test(code) || /\|\s*getline/.test(code)) {
    out.unverified.push('awk redirects its output inside the program (print > file or a pipe)');
  }
  if (/\bsystem\s*\(/.test(code)) out.unverified.push('awk runs commands (system())');
}

/** find: -fprint FILE writes FILE, -delete deletes under the roots, -exec runs a command. */
function findWrites(args: Word[], out: HiddenWrites): void {
  const roots: Word[] = [];
  let i = 0;
  while (i < args.length && args[i] !== null && !/^[-(!]/.test(args[i]!)) roots.push(args[i++]);
  if (i < args.length && args[i] === null) out.unverified.push('find is given a path only known at run time');
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === null) continue;
    if (/^-(fprint|fprint0|fls)$/.test(a) || a === '-fprintf') {
      const target = args[i + 1];
      if (target === null || target === undefined)
        out.unverified.push(`find ${a} writes a file only known at run time`);
      else out.paths.push(target);
      i += a === '-fprintf' ? 2 : 1;
    } else if (a === '-delete') {
      const where = roots.length ? roots : ['.'];
      for (const root of where) {
        if (root === null) out.unverified.push('find -delete under a path only known at run time');
        else out.paths.push(root);
      }
    } else if (/^-(exec|execdir|ok|okdir)$/.test(a)) {
      const command: Word[] = [];
      for (i++; i < args.length && args[i] !== ';' && args[i] !== '+'; i++) {
        command.push(args[i] === '{}' ? null : args[i]);
      }
      if (command.length) out.nested.push(command);
    }
  }
}
