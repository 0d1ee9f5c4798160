/**
 * A diagnostic as svc answers it (1-based lines and columns, a named severity), converted from
 * what a server sent.
 * @module
 */
import type { RawDiagnostic } from './lsp-tsserver';

export interface Diagnostic {
  /** 1-based. */
  line: number;
  column: number;
  end_line: number;
  end_column: number;
  severity: 'error' | 'warning' | 'information' | 'hint';
  message: string;
  source?: string;
  code?: string | number;
}

const SEVERITY: Record<number, Diagnostic['severity']> = {
  1: 'error',
  2: 'warning',
  3: 'information',
  4: 'hint',
};

/** A diagnostics answer: `dropped` only when the server reported more than svc keeps. */
export function answer(kept: { diagnostics: RawDiagnostic[]; dropped: number }, complete: boolean) {
  const diagnostics = kept.diagnostics.map(convert);
  return kept.dropped ? { diagnostics, complete, dropped: kept.dropped } : { diagnostics, complete };
}

export function convert(d: RawDiagnostic): Diagnostic {
  return {
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
    end_line: d.range.end.line + 1,
    end_column: d.range.end.character + 1,
    severity: SEVERITY[d.severity ?? 1] ?? 'error',
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(d.code !== undefined ? { code: d.code } : {}),
  };
}
