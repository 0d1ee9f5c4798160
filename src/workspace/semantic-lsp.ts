/**
 * Semantic operations through the file's language server (issue 22 item 2): rename
 * (`textDocument/rename`), find references (`textDocument/references`) and go to definition
 * (`textDocument/definition`), each asked through `LanguageServers.withClient()`. Every function
 * answers undefined (with the reason) when no server handles the file or it cannot answer, so the
 * caller falls back to tree-sitter. A rename's edits are the server's choice, not the user's: one
 * that reaches a file the edit tool would refuse (outside the workspace, svc's data dir, the deny
 * list), into `node_modules` or `.git/` (a probe's server wrote `core.fsmonitor` into .git/config,
 * and the next `git status` ran it), or that is not a rename (a range not holding the old name, a
 * text other than the new one) is refused here, with the file and the reason, before anything is
 * written.
 * @module
 */
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../errors';
import { readRegularFile } from './file-io';
import type { LanguageServers } from './lsp';
import type { LspClient } from './lsp-client';
import type { PathResolver, ResolvedPath } from './paths';

export type SemanticEngine = 'lsp' | 'tree-sitter';

/** One place in a file, 1-based line and column (UTF-16 code units, as the editor counts). */
export interface CodeLocation {
  path: string;
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  /** The line's text, trimmed ('' when withheld). */
  text: string;
  /** Why the line's text is not shown: the location is outside the workspace or protected. */
  text_withheld?: string;
}

interface Position {
  line: number;
  character: number;
}
interface Range {
  start: Position;
  end: Position;
}
interface TextEdit {
  range: Range;
  newText: string;
}
interface WorkspaceEdit {
  changes?: Record<string, TextEdit[]>;
  documentChanges?: (
    | { textDocument: { uri: string }; edits: TextEdit[] }
    | { kind: string; uri?: string; oldUri?: string; newUri?: string }
  )[];
}
type LocationLike =
  | { uri: string; range: Range }
  | { targetUri: string; targetRange: Range; targetSelectionRange?: Range };

/** Renames and definitions may load the whole project the first time. */
const REQUEST_MS = 60_000;

export type LspAnswer<T> = { ok: true; value: T; server: string } | { ok: false; reason: string };

/** Other files to show the server first (those mentioning the name), with their current text. */
export type RelatedFiles = { target: ResolvedPath; text: string }[];

export interface SemanticLspDeps {
  paths: PathResolver;
  lsp?: LanguageServers;
}

/** Offset of a 0-based LSP position in `text`. */
export function offsetAt(text: string, position: Position): number {
  let offset = 0;
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf('\n', offset);
    if (next === -1) return text.length;
    offset = next + 1;
  }
  return Math.min(offset + position.character, text.length);
}

/** 0-based LSP position of an offset in `text`. */
export function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset);
  const line = before.split('\n').length - 1;
  return { line, character: offset - (before.lastIndexOf('\n') + 1) };
}

async function ask<T>(
  deps: SemanticLspDeps,
  target: ResolvedPath,
  text: string,
  related: RelatedFiles,
  fn: (lsp: { client: LspClient; uri: string }) => Promise<T>,
  signal?: AbortSignal,
): Promise<LspAnswer<T>> {
  if (!deps.lsp) return { ok: false, reason: 'no language servers in this workspace' };
  const server = deps.lsp.serverFor(target.abs);
  if (!server) return { ok: false, reason: `no language server handles ${target.rel}` };
  try {
    const answer = await deps.lsp.withClient(
      target,
      text,
      async (lsp) => {
        for (const file of related) if (file.target.abs !== target.abs) lsp.open(file.target, file.text);
        return { ok: true as const, value: await fn(lsp), server: lsp.id };
      },
      signal,
    );
    return answer ?? { ok: false, reason: `no language server handles ${target.rel}` };
  } catch (error) {
    if (SvcError.is(error) && (error.code === 'unavailable' || error.code === 'timeout'))
      return { ok: false, reason: error.message };
    // A server that answers with an error (it cannot rename there, say) is a fallback too.
    if (error instanceof Error && !SvcError.is(error)) return { ok: false, reason: error.message };
    // The call was aborted (its request cancelled at the server): no fallback.
    throw error;
  }
}

/** The edits a rename makes, per workspace-relative file; refused when one is not ours to edit. */
export async function lspRename(
  deps: SemanticLspDeps,
  target: ResolvedPath,
  text: string,
  offset: number,
  newName: string,
  related: RelatedFiles,
  signal?: AbortSignal,
): Promise<LspAnswer<Map<string, TextEdit[]>>> {
  const answer = await positionRequest(deps, target, text, offset, related, signal, 'textDocument/rename', {
    newName,
  });
  if (!answer.ok) return answer;
  const edit = (answer.value ?? {}) as WorkspaceEdit;
  const byFile = new Map<string, TextEdit[]>();
  const add = (uri: string, edits: TextEdit[]) => {
    const rel = ownFile(deps.paths, uri, target.rel);
    byFile.set(rel, [...(byFile.get(rel) ?? []), ...edits]);
  };
  for (const change of edit.documentChanges ?? []) {
    if ('kind' in change) {
      throw new SvcError(
        'invalid_input',
        `rename_symbol: the language server's rename of ${target.rel} would also ${change.kind} the file ${change.uri ?? change.oldUri}; svc applies text edits only. Rename the file yourself (bash git mv) and then the symbol`,
      );
    }
    add(change.textDocument.uri, change.edits);
  }
  for (const [uri, edits] of Object.entries(edit.changes ?? {})) add(uri, edits);
  return { ok: true, value: byFile, server: answer.server };
}

type Refusal = { reason: string; why: string };

/** Why a file the server named is not the rename's to edit, if it is not (the edit tool's path rules too). */
function refusalOf(paths: PathResolver, uri: string, abs: string): Refusal | undefined {
  if (!uri.startsWith('file:') || !paths.contains(abs))
    return { reason: 'outside_workspace', why: 'outside the workspace' };
  const parts = relative(paths.root, abs).split(sep);
  if (parts.includes('node_modules'))
    return { reason: 'node_modules', why: 'under node_modules (a dependency)' };
  if (parts.includes('.git'))
    return {
      reason: 'git_dir',
      why: "inside .git (the repository's own files, which git runs commands from)",
    };
  try {
    paths.resolve(abs, 'rename');
  } catch (error) {
    if (!SvcError.is(error)) throw error;
    const where = error.details?.protected;
    return {
      reason: String(error.details?.reason ?? 'forbidden'),
      why: where ? `in ${String(where)}, which svc's tools never write` : 'a path the edit tool refuses',
    };
  }
  return undefined;
}

/** A file the rename may edit: one the edit tool could, not under node_modules or .git. */
function ownFile(paths: PathResolver, uri: string, from: string): string {
  const abs = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
  const refused = refusalOf(paths, uri, abs);
  if (refused) {
    const shown = refused.reason === 'outside_workspace' ? abs : paths.display(abs);
    throw new SvcError(
      'forbidden',
      `rename_symbol: renaming the symbol in ${from} would also edit ${shown}, which is ${refused.why}; nothing was changed. The symbol is declared or used by code you do not own: rename a symbol your workspace declares, or change its uses with edit mode replace after search mode symbol-references`,
      { details: { file: shown, reason: refused.reason } },
    );
  }
  return paths.display(abs);
}

/**
 * A server's edits to one file are a rename of `oldName` to `newName`: each range holds the old
 * name now and each text is the new one (or, for a shorthand property or an import/export
 * specifier, `old: new`, `new: old`, `old as new`, `new as old`). Anything else is refused.
 */
export function checkRenameEdits(
  file: string,
  content: string | undefined,
  edits: TextEdit[],
  names: { from: string; oldName: string; newName: string },
): asserts content is string {
  const { oldName, newName } = names;
  const refuse = (what: string) =>
    new SvcError(
      'forbidden',
      `rename_symbol: the language server's rename of ${oldName} in ${names.from} would also change ${file}: ${what}; a rename edit replaces the old name with the new one, so nothing was changed. Change the uses with edit mode replace after search mode symbol-references`,
      { details: { file, reason: 'not_a_rename' } },
    );
  if (content === undefined) throw refuse('a file svc does not read (missing, binary or too large)');
  const allowed = new Set([
    newName,
    `${oldName}: ${newName}`,
    `${newName}: ${oldName}`,
    `${oldName} as ${newName}`,
    `${newName} as ${oldName}`,
  ]);
  for (const edit of edits) {
    const start = offsetAt(content, edit.range.start);
    const there = content.slice(start, offsetAt(content, edit.range.end));
    const line = edit.range.start.line + 1;
    if (there !== oldName)
      throw refuse(
        `line ${line} holds ${JSON.stringify(there.slice(0, 40))} where the edit goes, not ${oldName}`,
      );
    if (!allowed.has(edit.newText))
      throw refuse(`line ${line} would get ${JSON.stringify(edit.newText.slice(0, 40))}, not ${newName}`);
  }
}

/** Apply LSP text edits to a file's text (last edit first, so offsets stay valid). */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const located = edits
    .map((e) => ({ start: offsetAt(text, e.range.start), end: offsetAt(text, e.range.end), text: e.newText }))
    .sort((a, b) => b.start - a.start);
  let next = text;
  for (const e of located) next = next.slice(0, e.start) + e.text + next.slice(e.end);
  return next;
}

export function lspReferences(
  deps: SemanticLspDeps,
  target: ResolvedPath,
  text: string,
  offset: number,
  related: RelatedFiles,
  signal?: AbortSignal,
): Promise<LspAnswer<CodeLocation[]>> {
  return positionRequest(deps, target, text, offset, related, signal, 'textDocument/references', {
    context: { includeDeclaration: true },
  }).then((answer) => locations(deps.paths, answer));
}

export function lspDefinition(
  deps: SemanticLspDeps,
  target: ResolvedPath,
  text: string,
  offset: number,
  related: RelatedFiles,
  signal?: AbortSignal,
): Promise<LspAnswer<CodeLocation[]>> {
  return positionRequest(deps, target, text, offset, related, signal, 'textDocument/definition', {}).then(
    (answer) => locations(deps.paths, answer),
  );
}

/** A request about a position in `target` (rename, references, definition): its raw answer. */
function positionRequest(
  deps: SemanticLspDeps,
  target: ResolvedPath,
  text: string,
  offset: number,
  related: RelatedFiles,
  signal: AbortSignal | undefined,
  method: string,
  extra: Record<string, unknown>,
): Promise<LspAnswer<unknown>> {
  return ask(
    deps,
    target,
    text,
    related,
    ({ client, uri }) =>
      client.request(
        method,
        { textDocument: { uri }, position: positionAt(text, offset), ...extra },
        REQUEST_MS,
        signal,
      ),
    signal,
  );
}

/** A position request's answer as locations (references, definition). */
function locations(paths: PathResolver, answer: LspAnswer<unknown>): LspAnswer<CodeLocation[]> {
  if (!answer.ok) return answer;
  return { ok: true, value: toLocations(paths, answer.value), server: answer.server };
}

function toLocations(paths: PathResolver, raw: unknown): CodeLocation[] {
  const list = (Array.isArray(raw) ? raw : raw ? [raw] : []) as LocationLike[];
  const texts = new Map<string, string[]>();
  const lineOf = (abs: string, line: number) => {
    let lines = texts.get(abs);
    if (!lines) {
      try {
        lines = readRegularFile(abs).toString('utf8').split('\n');
      } catch {
        lines = [];
      }
      texts.set(abs, lines);
    }
    return (lines[line] ?? '').trim();
  };
  return list.map((item) => {
    const uri = 'uri' in item ? item.uri : item.targetUri;
    const range = 'uri' in item ? item.range : (item.targetSelectionRange ?? item.targetRange);
    const abs = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
    const place = {
      path: paths.contains(abs) ? paths.display(abs) : abs,
      line: range.start.line + 1,
      column: range.start.character + 1,
      end_line: range.end.line + 1,
      end_column: range.end.character + 1,
    };
    const readable = readableLocation(paths, uri, abs);
    if ('withheld' in readable) return { ...place, text: '', text_withheld: readable.withheld };
    return { ...place, text: lineOf(readable.abs, range.start.line) };
  });
}

/**
 * A location the server named is read (for its line's text) only as the read tool would read it,
 * and only inside the workspace: the server chose the file, not the user. A protected location
 * (svc's data dir, the sandbox deny list) or one outside the workspace keeps its place, not its text.
 */
function readableLocation(
  paths: PathResolver,
  uri: string,
  abs: string,
): { abs: string } | { withheld: string } {
  if (!uri.startsWith('file:')) return { withheld: 'not a file: URI' };
  try {
    const target = paths.resolve(abs, 'location');
    return target.inside ? { abs: target.abs } : { withheld: 'outside the workspace' };
  } catch (error) {
    const details = SvcError.is(error) ? error.details : undefined;
    if (details?.reason === 'protected_path')
      return { withheld: `in ${String(details.protected)}, which svc's tools never read` };
    return { withheld: 'outside the workspace' };
  }
}
