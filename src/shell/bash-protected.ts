/**
 * Protected locations in a bash command (issue 15, item 3): any literal path (argument, option
 * value, redirect, glob) into svc's data directory, credential store or the deny list is
 * refused; reading a process environment asks; a recursive read over a directory holding a
 * protected location asks, unless the OS sandbox hides it anyway.
 * @module
 */
import { realpathOfDeepest } from '../workspace/paths';
import { positionals, type Word } from './bash-rules';
import type { BashAnalysisOptions, Concern, ProtectedEntry } from './bash-types';
import { globReaches, hasGlob, isInside } from './bash-words';

/** What the checks need from the walk over a command. */
export interface WalkContext {
  readonly options: BashAnalysisOptions;
  /** `*` may match hidden names (the script changes globbing). */
  readonly dotglob: boolean;
  resolvePath(path: string): string | null;
  block(reason: string): void;
  deny(denial: { kind: 'path_denied' | 'write_outside_workspace'; path: string; label?: string }): void;
  concern(kind: Concern['kind'], text: string): void;
}

export const ENVIRON = /^\/proc\/[^/]+\/(task\/[^/]+\/)?environ$/;

/** Commands that read file contents recursively (with their recursive flag, when they need one). */
const RECURSIVE_READERS: Record<string, RegExp | true> = {
  grep: /^(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive|--dereference-recursive)$/,
  egrep: /^(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)$/,
  fgrep: /^(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)$/,
  rgrep: true,
  rg: /^(-[a-zA-Z]*u[a-zA-Z]*|--hidden|--no-ignore.*|-\.)$/,
  ag: /^(-[a-zA-Z]*u[a-zA-Z]*|--hidden|--unrestricted)$/,
  ack: true,
  tar: true,
  zip: /^(-[a-zA-Z]*r[a-zA-Z]*|--recurse-paths)$/,
  cp: /^(-[a-zA-Z]*[rRa][a-zA-Z]*|--recursive|--archive)$/,
  rsync: true,
  scp: /^-[a-zA-Z]*r[a-zA-Z]*$/,
  // find only lists names, unless it runs something on what it finds.
  find: /^-(exec|execdir|ok|okdir)$/,
};
/** Words that name what to leave out: `--exclude-dir=.svc` is not a read of .svc. */
const EXCLUDING_OPTION = /^--(exclude|ignore|skip)[\w-]*=/;

/** Every literal word of a command (and option values) that names a protected location. */
export function checkProtectedWords(ctx: WalkContext, argv: Word[]): void {
  const list = ctx.options.protectedPaths;
  const named = argv[0]?.includes('/') ? argv : argv.slice(1);
  for (const word of named) {
    if (word === null || word === '' || EXCLUDING_OPTION.test(word)) continue;
    if (ENVIRON.test(word))
      ctx.concern('env', `reads a process environment (${word}), which may hold secrets`);
    if (!list?.length) continue;
    const value = word.startsWith('-') ? (word.includes('=') ? word.slice(word.indexOf('=') + 1) : '') : word;
    if (value) checkProtectedPath(ctx, value, argv[0] ?? 'the command');
  }
}

export function checkProtectedPath(ctx: WalkContext, value: string, by: string): void {
  const list = ctx.options.protectedPaths;
  if (!list?.length) return;
  const abs = ctx.resolvePath(value);
  if (abs === null) return;
  let hit: ProtectedEntry | undefined;
  if (hasGlob(value)) {
    // The directories before the first pattern are literal: under a readable one nothing is reached.
    const segments = abs.split('/');
    const literal =
      segments
        .slice(
          0,
          segments.findIndex((s) => hasGlob(s)),
        )
        .join('/') || '/';
    const real = realpathOfDeepest(literal);
    hit = list.find((p) => globReaches(abs, p.path, ctx.dotglob) && !p.readable?.(real));
    if (hit) {
      ctx.block(`${by} names ${value}, which may reach ${hit.label} (${hit.why}); ${advice(hit)}`);
      ctx.deny({ kind: 'path_denied', path: abs, label: hit.label });
    }
    return;
  }
  const real = realpathOfDeepest(abs);
  hit = list.find((p) => isInside(real, p.path) && !p.readable?.(real));
  if (hit) {
    ctx.block(`${by} names ${value}, which is in ${hit.label} (${hit.why}); ${advice(hit)}`);
    ctx.deny({ kind: 'path_denied', path: real, label: hit.label });
  }
}

/** A recursive read over a directory that holds a protected location reads it too. */
export function checkRecursiveRead(ctx: WalkContext, argv: Word[]): void {
  const [name, ...args] = argv;
  const list = ctx.options.protectedPaths;
  if (name === null || name === undefined || !list?.length || ctx.options.sandboxed) return;
  const flag = RECURSIVE_READERS[name];
  if (!flag) return;
  if (flag !== true && !args.some((a) => a !== null && flag.test(a))) return;
  if (args.some((a) => a !== null && EXCLUDING_OPTION.test(a))) return;
  let roots = positionals(args);
  const patternFirst = ['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack', 'rgrep'].includes(name);
  if (patternFirst && !args.some((a) => a === '-e' || a === '-f')) roots = roots.slice(1);
  if (roots.length === 0) roots = ['.'];
  for (const root of roots) {
    const abs = root === null ? null : ctx.resolvePath(root);
    if (abs === null) {
      ctx.concern('protected', `${name} reads recursively from a directory only known at run time`);
      continue;
    }
    const real = realpathOfDeepest(abs);
    const hit = list.find((p) => p.path !== real && isInside(p.path, real));
    if (hit) {
      ctx.concern(
        'protected',
        `${name} reads everything under ${root}, including ${hit.label} (${hit.why}); exclude it or name the files to read`,
      );
    }
  }
}

function advice(hit: ProtectedEntry): string {
  return hit.kind === 'deny_read'
    ? `svc never lets a command read or write it (to allow it: options.sandbox.allow_read = ["${hit.label}"])`
    : 'svc never lets a command or tool read or write it, and no setting allows it';
}
