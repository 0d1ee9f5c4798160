/**
 * File reads and edits: `view` (numbered lines, images as data), `write`, string-replacing `edit` and
 * `multiedit`. Reads are tracked per session; an edit or overwrite of a file the session has not
 * read, or that changed on disk since it did, is refused. Every change goes through the change
 * committer (guards, approval with the diff, history, events).
 * @module
 */
import { existsSync } from 'node:fs';
import { SvcError } from '../errors';
import type { OpContext } from './context';
import type { AppliedChange, ChangeCommitter } from './file-changes';
import { imageMediaType, looksBinary } from './file-io';
import {
  createFileLoader,
  type LoadedFile,
  notFound,
  readTarget,
  statOrUndefined,
  VIEW_LIMITS,
} from './file-load';
import type { PathResolver, ResolvedPath } from './paths';
import type { ReadTracker } from './read-tracker';
import { type MatchKind, replaceText } from './text-replace';

export type { LoadedFile };
export { VIEW_LIMITS };

export interface TextView {
  kind: 'text';
  path: string;
  total_lines: number;
  /** 1-based number of the first line shown (0 when nothing is shown). */
  start_line: number;
  end_line: number;
  /** Lines as `<number>\t<text>`, long lines cut. */
  content: string;
  truncated: boolean;
  /** 0-based offset to pass to continue reading; present when truncated. */
  next_offset?: number;
}

export interface ImageView {
  kind: 'image';
  path: string;
  media_type: string;
  size_bytes: number;
  /** Base64 image data. */
  data: string;
}

export interface EditOutcome {
  path: string;
  change: 'create' | 'modify' | 'delete' | 'none';
  replacements?: number;
  /** edit: how old_string was found (exact, or the loose level that matched); multiedit: one per edit. */
  match?: MatchKind;
  matches?: MatchKind[];
  /** 1-based line where the edit's replaced text starts (edit only). */
  line?: number;
  additions: number;
  deletions: number;
  diff: string;
  history_id?: number;
}

type MatchInfo = Pick<EditOutcome, 'match' | 'matches' | 'line'>;

export interface FileOps {
  view(
    input: { path: string; offset?: number; limit?: number },
    ctx: OpContext,
  ): Promise<TextView | ImageView>;
  write(input: { path: string; content: string }, ctx: OpContext): Promise<EditOutcome>;
  edit(
    input: { path: string; old_string: string; new_string: string; replace_all?: boolean },
    ctx: OpContext,
  ): Promise<EditOutcome>;
  multiedit(
    input: { path: string; edits: { old_string: string; new_string: string; replace_all?: boolean }[] },
    ctx: OpContext,
  ): Promise<EditOutcome>;
  /** Load an existing text file for editing, enforcing read-before-edit and staleness for the session. */
  loadForEdit(path: string, ctx: OpContext, field?: string): Promise<LoadedFile>;
  /** Record that the session has seen the file as it is now (./file-load.ts `markRead`). */
  markRead(
    sessionId: string | undefined,
    target: ResolvedPath,
    buffer: Buffer,
    after?: Promise<void>,
  ): Promise<void>;
}

export function createFileOps(deps: {
  paths: PathResolver;
  reads: ReadTracker;
  changes: ChangeCommitter;
}): FileOps {
  const { markRead, checkFresh, loadText, loadForEdit } = createFileLoader(deps);

  const outcome = (applied: AppliedChange, replacements?: number, how?: MatchInfo): EditOutcome => ({
    path: applied.path,
    change: applied.change,
    ...(replacements === undefined ? {} : { replacements }),
    ...how,
    additions: applied.additions,
    deletions: applied.deletions,
    diff: applied.diff,
    history_id: applied.history_id,
  });

  const commitText = async (
    file: { target: ResolvedPath; buffer: Buffer | null },
    after: string,
    ctx: OpContext,
    title: string,
    replacements?: number,
    how?: MatchInfo,
  ): Promise<EditOutcome> => {
    if (file.buffer !== null && file.buffer.toString('utf8') === after) {
      return { path: file.target.rel, change: 'none', ...how, additions: 0, deletions: 0, diff: '' };
    }
    const [applied] = await deps.changes.commit([{ target: file.target, before: file.buffer, after }], ctx, {
      title,
    });
    return outcome(applied, replacements, how);
  };

  const serialized = serializePerFile((path) => deps.paths.resolve(path).abs);

  return {
    loadForEdit,
    markRead,
    async view(input, ctx) {
      const target = deps.paths.resolve(input.path);
      const stat = statOrUndefined(target.abs);
      if (!stat) throw notFound(target, 'path');
      if (stat.isDirectory()) {
        throw new SvcError('invalid_input', `path: ${target.rel} is a directory; use ls to list it`);
      }
      const head = readTarget(target, 'path', 8192);
      const media = imageMediaType(head);
      if (media) {
        if (stat.size > VIEW_LIMITS.maxImageBytes) {
          throw new SvcError(
            'invalid_input',
            `path: ${target.rel} is a ${stat.size}-byte image; view attaches images up to ${VIEW_LIMITS.maxImageBytes} bytes`,
          );
        }
        const buffer = readTarget(target, 'path');
        await markRead(ctx.sessionId, target, buffer, ctx.ahead);
        return {
          kind: 'image',
          path: target.rel,
          media_type: media,
          size_bytes: buffer.length,
          data: buffer.toString('base64'),
        };
      }
      if (looksBinary(head)) {
        throw new SvcError(
          'invalid_input',
          `path: ${target.rel} is a binary file (${stat.size} bytes); view shows text and images (png, jpeg, gif, webp) only`,
        );
      }
      const file = loadText(target, 'path');
      await markRead(ctx.sessionId, target, file.buffer, ctx.ahead);
      return renderLines(target.rel, file.text, input.offset ?? 0, input.limit ?? VIEW_LIMITS.defaultLines);
    },

    write: (input, ctx) =>
      serialized(input.path, async () => {
        const target = deps.paths.resolve(input.path);
        const stat = statOrUndefined(target.abs);
        if (stat?.isDirectory()) {
          throw new SvcError('invalid_input', `path: ${target.rel} is a directory; give a file path`);
        }
        // `dir/` names a directory: the write made a file called `dir` (found by probing).
        if (input.path.endsWith('/') || (process.platform === 'win32' && input.path.endsWith('\\'))) {
          throw new SvcError(
            'invalid_input',
            `path: ${input.path} ends with a slash, which names a directory; give a file path`,
          );
        }
        let before: Buffer | null = null;
        if (stat) {
          before = readTarget(target, 'path');
          await checkFresh(ctx, target, before, 'overwrite');
        }
        return commitText({ target, buffer: before }, input.content, ctx, `write ${target.rel}`);
      }),

    edit: (input, ctx) =>
      serialized(input.path, async () => {
        if (input.old_string === '') {
          // Creating a file with edit: allowed only when it does not exist (or is empty).
          const target = deps.paths.resolve(input.path);
          const existing = existsSync(target.abs) ? readTarget(target, 'path') : null;
          if (existing && existing.length > 0) {
            throw new SvcError(
              'invalid_input',
              `old_string: empty, but ${target.rel} already exists and is not empty; give the exact text to replace, or use write to replace the whole file`,
            );
          }
          if (existing) await checkFresh(ctx, target, existing, 'edit');
          return commitText({ target, buffer: existing }, input.new_string, ctx, `edit ${target.rel}`);
        }
        const file = await loadForEdit(input.path, ctx);
        const result = replaceText(file.text, input.old_string, input.new_string, {
          replaceAll: input.replace_all ?? false,
          path: file.target.rel,
        });
        return commitText(file, result.content, ctx, `edit ${file.target.rel}`, result.replacements, {
          match: result.match,
          line: result.line,
        });
      }),

    multiedit: (input, ctx) =>
      serialized(input.path, async () => {
        if (input.edits.length === 0) throw new SvcError('invalid_input', 'edits: give at least one edit');
        const file = await loadForEdit(input.path, ctx);
        const { content, replacements, matches } = applyEdits(file.text, input.edits, file.target.rel);
        return commitText(
          file,
          content,
          ctx,
          `multiedit ${file.target.rel} (${input.edits.length} edit${input.edits.length > 1 ? 's' : ''})`,
          replacements,
          { matches },
        );
      }),
  };
}

/** Applies the edits in order; one that does not match fails them all, naming the edits before it. */
function applyEdits(
  text: string,
  edits: readonly { old_string: string; new_string: string; replace_all?: boolean }[],
  path: string,
): { content: string; replacements: number; matches: MatchKind[] } {
  let content = text;
  let replacements = 0;
  const matches: MatchKind[] = [];
  for (const [index, edit] of edits.entries()) {
    const previous = index === 0 ? '' : ` (after applying edits[0]–edits[${index - 1}])`;
    try {
      const result = replaceText(content, edit.old_string, edit.new_string, {
        replaceAll: edit.replace_all ?? false,
        path,
        field: `edits[${index}]`,
      });
      content = result.content;
      replacements += result.replacements;
      matches.push(result.match);
    } catch (error) {
      if (SvcError.is(error) && previous) {
        throw new SvcError(error.code, `${error.message}${previous}; no edit was applied`, {
          details: error.details,
        });
      }
      throw error;
    }
  }
  return { content, replacements, matches };
}

/**
 * Edits of one file run one at a time: parallel tool calls on the same file then each see the
 * previous one's result instead of failing as stale.
 */
function serializePerFile(
  keyOf: (path: string) => string,
): <T>(path: string, fn: () => Promise<T>) => Promise<T> {
  const locks = new Map<string, Promise<unknown>>();
  const serialized = <T>(path: string, fn: () => Promise<T>): Promise<T> => {
    const key = keyOf(path);
    const previous = locks.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    locks.set(key, settled);
    void settled.then(() => {
      if (locks.get(key) === settled) locks.delete(key);
    });
    return run;
  };
  return serialized;
}

export function renderLines(path: string, text: string, offset: number, limit: number): TextView {
  const lines = text.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const total = lines.length;
  const count = Math.min(Math.max(limit, 1), VIEW_LIMITS.maxLines);
  if (offset > 0 && offset >= total) {
    throw new SvcError(
      'invalid_input',
      `offset: ${offset} is past the end of ${path}, which has ${total} line${total === 1 ? '' : 's'}`,
    );
  }
  const out: string[] = [];
  let chars = 0;
  let index = offset;
  for (; index < total && index < offset + count; index++) {
    let line = lines[index].endsWith('\r') ? lines[index].slice(0, -1) : lines[index];
    if (line.length > VIEW_LIMITS.maxLineChars) {
      line = `${line.slice(0, VIEW_LIMITS.maxLineChars)}… [line cut: ${line.length - VIEW_LIMITS.maxLineChars} more characters]`;
    }
    const numbered = `${String(index + 1).padStart(6, ' ')}\t${line}`;
    if (chars + numbered.length > VIEW_LIMITS.maxOutputChars && out.length > 0) break;
    out.push(numbered);
    chars += numbered.length + 1;
  }
  const truncated = index < total;
  return {
    kind: 'text',
    path,
    total_lines: total,
    start_line: out.length ? offset + 1 : 0,
    end_line: out.length ? index : 0,
    content: out.join('\n'),
    truncated,
    ...(truncated ? { next_offset: index } : {}),
  };
}
