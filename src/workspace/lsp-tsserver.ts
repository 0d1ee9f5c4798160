/**
 * Diagnostics asked of tsserver through typescript-language-server's `typescript.tsserverRequest`
 * command (see lsp-client.ts `askTsserver` for why they are asked, not waited for), mapped as the
 * server maps the lists it publishes.
 * @module
 */

/** A diagnostic as the protocol's `publishDiagnostics` and `textDocument/diagnostic` carry it. */
export interface RawDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  message: string;
  source?: string;
  code?: string | number;
}

/** typescript-language-server's command that passes a request on to its tsserver. */
const TSSERVER_REQUEST = 'typescript.tsserverRequest';
/** tsserver's three lists of a file, in the order typescript-language-server publishes them. */
const TSSERVER_DIAGNOSTICS = [
  'syntacticDiagnosticsSync',
  'semanticDiagnosticsSync',
  'suggestionDiagnosticsSync',
];
/** tsserver's categories as typescript-language-server maps them (`toDiagnosticSeverity`). */
const TSSERVER_SEVERITY: Record<string, number> = { error: 1, warning: 2, suggestion: 4 };

/** A diagnostic as tsserver answers it: 1-based lines and offsets, a category for the severity. */
interface TsserverDiagnostic {
  start: { line: number; offset: number };
  end: { line: number; offset: number };
  text: string;
  code?: number;
  category?: string;
  source?: string;
}

/** The server's initialize answer offers the command. */
export function offersTsserver(capabilities: Record<string, unknown>): boolean {
  const commands = (capabilities.executeCommandProvider as { commands?: unknown } | undefined)?.commands;
  return Array.isArray(commands) && commands.includes(TSSERVER_REQUEST);
}

/**
 * The file's three lists, asked at once (tsserver answers them in order, after the text sent
 * before them). undefined when an answer is not a list; a failed request throws its error.
 */
export async function tsserverLists(
  request: (method: string, params: unknown) => Promise<unknown>,
  uri: string,
): Promise<RawDiagnostic[] | undefined> {
  const answers = await Promise.all(
    TSSERVER_DIAGNOSTICS.map((command) =>
      request('workspace/executeCommand', { command: TSSERVER_REQUEST, arguments: [command, { file: uri }] }),
    ),
  );
  const lists = answers.map((answer) => (answer as { body?: unknown } | null)?.body);
  if (!lists.every(Array.isArray)) return undefined;
  return (lists as TsserverDiagnostic[][]).flat().map(fromTsserver);
}

/** As typescript-language-server publishes it (`toDiagnostic`). */
function fromTsserver(d: TsserverDiagnostic): RawDiagnostic {
  return {
    range: {
      start: { line: d.start.line - 1, character: d.start.offset - 1 },
      end: { line: d.end.line - 1, character: d.end.offset - 1 },
    },
    severity: TSSERVER_SEVERITY[d.category ?? ''] ?? 1,
    message: d.text,
    source: d.source ?? 'typescript',
    ...(d.code !== undefined ? { code: d.code } : {}),
  };
}
