/**
 * Tables for bash analysis: which commands only read (with the options that would make them
 * write or run other programs), which commands write where, and which wrap another command.
 * Words are literal strings, or `null` where the value is only known at run time ($VAR, $(…)).
 * @module
 */

export type Word = string | null;

/** Commands that only read, whatever their arguments (unless listed in UNSAFE_OPTIONS). */
// biome-ignore format: a packed table reads better
const READ_ONLY = new Set([
  'ls', 'cat', 'head', 'tail', 'wc', 'pwd', 'echo', 'printf', 'true', 'false', 'which', 'whoami', 'id',
  'uname', 'file', 'stat', 'du', 'df', 'tree', 'rg', 'grep', 'egrep', 'fgrep', 'diff', 'cmp',
  'basename', 'dirname', 'realpath', 'readlink', 'type', 'nl', 'cut', 'tr', 'column', 'jq',
  'od', 'hexdump', 'strings', 'md5sum', 'sha1sum', 'sha256sum', 'sha512sum', 'cksum', 'seq', 'test', '[',
  'sleep', 'tac', 'rev', 'fold', 'paste', 'comm', 'join', 'expand', 'unexpand', 'uptime', 'free', 'ps',
  'groups', 'locale', 'nproc', 'arch', 'cd', 'whereis', 'sort', 'uniq', 'find', 'date', 'hostname', 'xxd',
  'pushd', 'popd', 'dirs', 'lsof', 'getconf', 'tty', 'cal',
]);

/** Options that turn an otherwise read-only command into one that writes or executes. */
const UNSAFE_OPTIONS: Record<string, RegExp> = {
  sort: /^(-o|--output)/,
  find: /^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$/,
  rg: /^--pre(=|$)/,
  tree: /^-o$/,
  date: /^(-s|--set)/,
};

/** Read-only only with at most this many positional arguments (more would name an output file). */
const MAX_POSITIONALS: Record<string, number> = { uniq: 1, xxd: 1, hostname: 0 };

// biome-ignore format: a packed table reads better
const GIT_READ = new Set([
  'status', 'diff', 'log', 'show', 'blame', 'ls-files', 'ls-tree', 'rev-parse', 'describe', 'shortlog',
  'cat-file', 'grep', 'show-ref', 'for-each-ref', 'merge-base', 'name-rev', 'count-objects', 'whatchanged',
  'var', 'version', 'help', 'rev-list', 'check-ignore', 'cherry', 'range-diff', 'diff-tree', 'diff-index',
  'diff-files', 'ls-remote', 'reflog',
]);

// biome-ignore format: a packed table reads better
const VERSION_ONLY = new Set([
  'node', 'npm', 'npx', 'pnpm', 'yarn', 'python', 'python3', 'pip', 'pip3', 'go', 'cargo', 'rustc', 'java',
  'ruby', 'git', 'tsc', 'deno', 'bun', 'make', 'gcc', 'clang', 'docker', 'rg', 'bash', 'sh',
]);

// biome-ignore format: a packed table reads better
const NPM_READ = new Set(['ls', 'list', 'view', 'info', 'outdated', 'help', 'root', 'prefix', 'why', 'explain', 'search']);

/** Commands that run another command given as their arguments. */
// biome-ignore format: a packed table reads better
export const WRAPPERS = new Set(['command', 'builtin', 'exec', 'nice', 'nohup', 'time', 'timeout', 'env', 'stdbuf', 'ionice', 'xargs']);

export const PRIVILEGED = new Set(['sudo', 'doas', 'su', 'pkexec', 'runas']);
export const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'fish', 'busybox']);
export const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'aria2c', 'http', 'https']);
export const INTERPRETERS = new Set([
  ...SHELLS,
  'python',
  'python3',
  'perl',
  'ruby',
  'node',
  'php',
  'source',
  '.',
]);

/**
 * Why a command prints the environment (`env`, `printenv`, `set`, `export -p`…), or undefined.
 * In svc's own environment sit provider keys and whatever secrets the user exported.
 */
export function readsEnvironment(argv: Word[], wrappers: string[]): string | undefined {
  const [name, ...args] = argv;
  if (name === 'env' && wrappers.length === 0) return 'env prints the environment';
  if (name === 'printenv') return 'printenv prints the environment';
  if (name === 'set' && (args.length === 0 || args.every((a) => a === '-o' || a === '+o')))
    return 'set prints every variable';
  if (
    (name === 'export' || name === 'declare' || name === 'typeset' || name === 'readonly') &&
    (args.length === 0 || args.some((a) => a === '-p' || a === null || /^-[a-zA-Z]*[px]/.test(a ?? ''))) &&
    !args.some((a) => a?.includes('='))
  )
    return `${name} prints variables`;
  if (name === 'compgen' && args.some((a) => a === '-v' || a === '-e' || a === 'variable' || a === 'export'))
    return 'compgen lists variables';
  if (name === 'ps' && args.some((a) => a !== null && /^[a-zA-Z]*e[a-zA-Z]*$/.test(a) && !a.startsWith('-')))
    return 'ps e prints the environment of processes';
  return undefined;
}

/** Words that stand for the root or the home directory when deleted recursively. */
export function catastrophicTarget(text: string, home: string | undefined): string | undefined {
  const t = text.replace(/\/+$/, '') || '/';
  if (t === '/' || t === '/*') return 'the whole filesystem';
  if (['~', '~/*', '$HOME', '${HOME}', '$HOME/*', '${HOME}/*', '"$HOME"', '"${HOME}"'].includes(t))
    return 'your home directory';
  if (home && (t === home || t === `${home}/*`)) return 'your home directory';
  return undefined;
}

export function positionals(args: Word[]): Word[] {
  const out: Word[] = [];
  let options = true;
  for (const a of args) {
    if (options && a === '--') {
      options = false;
      continue;
    }
    if (options && a?.startsWith('-') && a !== '-') continue;
    out.push(a);
  }
  return out;
}

/** Peel wrapper commands (`timeout 5 x`, `env A=1 x`, `xargs x`) off an argv. */
export function unwrap(argv: Word[]): {
  argv: Word[];
  setsEnv: boolean;
  extraArgs: boolean;
  wrappers: string[];
} {
  let rest = argv;
  let setsEnv = false;
  let extraArgs = false;
  const wrappers: string[] = [];
  for (let guard = 0; guard < 8 && rest.length > 1 && rest[0] !== null && WRAPPERS.has(rest[0]); guard++) {
    const name = rest[0];
    let i = 1;
    const skipOptions = (withValue: RegExp) => {
      while (i < rest.length && rest[i] !== null && rest[i]!.startsWith('-')) {
        if (rest[i] === '--') {
          i++;
          break;
        }
        if (withValue.test(rest[i]!)) i++;
        i++;
      }
    };
    if (name === 'env') {
      skipOptions(/^(-u|--unset|-C|--chdir|-S|--split-string)$/);
      while (i < rest.length && rest[i] !== null && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[i]!)) {
        setsEnv = true;
        i++;
      }
    } else if (name === 'timeout') {
      skipOptions(/^(-s|--signal|-k|--kill-after)$/);
      i++; // the duration
    } else if (name === 'nice' || name === 'ionice') {
      skipOptions(/^(-n|-c|-p)$/);
    } else if (name === 'stdbuf') {
      skipOptions(/^$/);
    } else if (name === 'xargs') {
      skipOptions(/^(-I|-n|-L|-P|-d|-E|-s|-a)$/);
      extraArgs = true;
    } else if (name === 'command') {
      if (rest[1] === '-v' || rest[1] === '-V') break;
      skipOptions(/^$/);
    } else {
      skipOptions(/^$/);
    }
    if (i >= rest.length) break;
    wrappers.push(name);
    rest = rest.slice(i);
  }
  return { argv: rest, setsEnv, extraArgs, wrappers };
}

/** Is this (unwrapped) command read-only? Dynamic words make option checks fail closed. */
export function isReadOnly(argv: Word[]): boolean {
  const [name, ...args] = argv;
  if (name === null || name === undefined) return false;
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v' || args[0] === '-V')) {
    if (VERSION_ONLY.has(name)) return true;
  }
  if (name === 'git') return gitReadOnly(args);
  if (name === 'command') return (args[0] === '-v' || args[0] === '-V') && args.length === 2;
  if (name === 'npm' || name === 'pnpm' || name === 'yarn') {
    const sub = positionals(args)[0];
    return sub !== null && sub !== undefined && NPM_READ.has(sub);
  }
  if (name === 'go') {
    const sub = args[0];
    return (
      sub === 'version' || sub === 'list' || (sub === 'env' && !args.includes('-w') && !args.includes('-u'))
    );
  }
  if (!READ_ONLY.has(name)) return false;
  const unsafe = UNSAFE_OPTIONS[name];
  if (unsafe && args.some((a) => a === null || unsafe.test(a))) {
    // A dynamic word could be any option; `command` only reads with -v/-V.
    return false;
  }
  const max = MAX_POSITIONALS[name];
  if (max !== undefined && positionals(args).length > max) return false;
  return true;
}

function gitReadOnly(args: Word[]): boolean {
  let i = 0;
  // Global options before the subcommand. `-c` can set a pager or hook: not read-only.
  while (i < args.length && args[i] !== null && args[i]!.startsWith('-')) {
    const a = args[i]!;
    if (a === '-C') i += 2;
    else if (a === '--no-pager' || a === '-P' || a === '--no-optional-locks' || a === '--literal-pathspecs')
      i++;
    else return false;
  }
  const sub = args[i];
  if (sub === null || sub === undefined) return false;
  const rest = args.slice(i + 1);
  if (rest.some((a) => a === null)) return false;
  const words = rest as string[];
  if (words.some((a) => /^--output(=|$)/.test(a))) return false;
  if (GIT_READ.has(sub)) {
    if (sub === 'reflog') return words.length === 0 || words[0] === 'show' || words[0].startsWith('-');
    return true;
  }
  const pos = positionals(words);
  switch (sub) {
    case 'branch':
      return (
        pos.length === 0 &&
        !words.some((w) =>
          /^(-d|-D|-m|-M|-c|-C|--delete|--move|--copy|--set-upstream|-u|--unset-upstream|--edit-description|-f|--force)/.test(
            w,
          ),
        )
      );
    case 'tag':
      return pos.length === 0 || words.includes('-l') || words.includes('--list');
    case 'remote':
      return pos.length === 0 || pos[0] === 'show' || pos[0] === 'get-url';
    case 'stash':
      return pos[0] === 'list' || pos[0] === 'show';
    case 'config':
      return (
        words.some((w) => /^(--get|--get-all|--get-regexp|--list|-l|--show-origin)$/.test(w)) &&
        !words.some((w) =>
          /^(--add|--unset|--unset-all|--replace-all|--edit|-e|--rename-section|--remove-section)$/.test(w),
        )
      );
    case 'worktree':
      return pos[0] === 'list';
    case 'submodule':
      return pos[0] === 'status';
    case 'notes':
      return pos.length === 0 || pos[0] === 'list' || pos[0] === 'show';
    default:
      return false;
  }
}

export interface WriteTargets {
  /** Literal paths the command changes, resolved later against the cwd. */
  paths: string[];
  /** Some targets are only known at run time. */
  dynamic: boolean;
}

/** Paths a known file-changing command writes or deletes; undefined when the command is not one. */
export function writeTargets(argv: Word[]): WriteTargets | undefined {
  const [name, ...args] = argv;
  if (name === null || name === undefined) return undefined;
  const collect = (words: Word[]): WriteTargets => ({
    paths: words.filter((w): w is string => w !== null),
    dynamic: words.some((w) => w === null),
  });
  const pos = positionals(args);
  switch (name) {
    case 'rm':
    case 'rmdir':
    case 'touch':
    case 'mkdir':
    case 'tee':
    case 'shred':
    case 'unlink':
    case 'mv':
      return collect(pos);
    case 'truncate':
      return collect(positionals(dropOptionValues(args, /^(-s|--size|-r|--reference)$/)));
    case 'cp':
    case 'ln':
    case 'install':
    case 'rsync':
    case 'scp':
      return collect(pos.slice(-1));
    case 'chmod':
    case 'chown':
    case 'chgrp':
      return collect(pos.slice(1));
    case 'dd': {
      const of = args.find((a) => a === null || a.startsWith('of='));
      if (of === undefined) return { paths: [], dynamic: false };
      return of === null ? { paths: [], dynamic: true } : { paths: [of.slice(3)], dynamic: false };
    }
    case 'sed':
    case 'perl':
      if (!args.some((a) => a === null || /^(-i|--in-place)/.test(a) || /^-[a-zA-Z]*i/.test(a ?? '')))
        return undefined;
      return collect(pos.slice(1));
    case 'curl':
      return optionTargets(args, /^(-o|--output)$/, /^--output=/);
    case 'wget':
      return optionTargets(
        args,
        /^(-O|--output-document|-P|--directory-prefix|-o|--output-file)$/,
        /^--(output-document|directory-prefix|output-file)=/,
      );
    case 'sort':
      return optionTargets(args, /^(-o|--output)$/, /^--output=/);
    case 'tar':
      return optionTargets(args, /^(-C|--directory)$/, /^--directory=/);
    case 'unzip':
      return optionTargets(args, /^-d$/, /^$/);
    case 'git':
      return args[0] === 'clone' ? collect(positionals(args.slice(1)).slice(1, 2)) : undefined;
    default:
      return undefined;
  }
}

/** Targets given as option values (`-o file`, `--output=file`); undefined when there are none. */
function optionTargets(args: Word[], withValue: RegExp, joined: RegExp): WriteTargets | undefined {
  const paths: string[] = [];
  let dynamic = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === null) continue;
    if (withValue.test(a)) {
      const value = args[++i];
      if (value === null || value === undefined) dynamic = true;
      else paths.push(value);
    } else if (joined.source !== '^$' && joined.test(a)) paths.push(a.slice(a.indexOf('=') + 1));
  }
  return paths.length || dynamic ? { paths, dynamic } : undefined;
}

function dropOptionValues(args: Word[], withValue: RegExp): Word[] {
  const out: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== null && withValue.test(args[i]!)) {
      i++;
      continue;
    }
    out.push(args[i]);
  }
  return out;
}

/** Commands whose first argument names what they do (`git commit`, `npm run build`). */
// biome-ignore format: a packed table reads better
const SUBCOMMANDS: Record<string, number> = {
  git: 1, npm: 1, pnpm: 1, yarn: 1, bun: 1, deno: 1, cargo: 1, go: 1, docker: 1, kubectl: 1, pip: 1,
  pip3: 1, make: 1, npx: 1, uv: 1, poetry: 1, gradle: 1, mvn: 1, dotnet: 1, brew: 1, apt: 1, 'apt-get': 1,
};

/** The stable head of a command for a session-wide grant: `npm run build`, `git commit`, `rm`. */
export function commandHead(argv: Word[]): string {
  const [name, ...args] = argv;
  if (name === null || name === undefined) return '?';
  const depth = SUBCOMMANDS[name];
  if (!depth) return name;
  const pos = positionals(args);
  const words = [name];
  if (pos[0] !== undefined) words.push(pos[0] ?? '?');
  if (
    (name === 'npm' || name === 'pnpm' || name === 'yarn' || name === 'bun') &&
    pos[0] === 'run' &&
    pos[1] !== undefined
  )
    words.push(pos[1] ?? '?');
  return words.join(' ');
}

/** Does `argv` start with the words of a config entry (`git push`, `rm -rf`)? */
export function matchesEntry(argv: Word[], entry: string): boolean {
  const words = entry
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '*');
  if (words.length === 0) return false;
  return words.every((w, i) => argv[i] === w);
}
