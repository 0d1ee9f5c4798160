/**
 * CSV in and out (RFC 4180): quoted fields with `""` escapes and embedded newlines, CRLF or LF
 * line ends, a header row. Used by spawn_agents_on_csv for its input rows and its results file.
 * @module
 */
import { SvcError } from '../errors';

export interface CsvTable {
  headers: string[];
  rows: Record<string, string>[];
}

/** Most columns of a CSV input. */
export const MAX_CSV_COLUMNS = 1000;

/** Parse CSV text with a header row. Errors name the line. */
export function parseCsv(text: string, field = 'csv'): CsvTable {
  const records = parseRecords(text.replace(/^\uFEFF/, ''), field);
  while (records.length && records.at(-1)!.every((cell) => cell === '')) records.pop();
  if (records.length === 0)
    throw new SvcError('invalid_input', `${field}: empty; give a header row and rows`);
  if (records[0].length > MAX_CSV_COLUMNS) {
    throw new SvcError(
      'invalid_input',
      `${field}: the header has ${records[0].length} columns, more than ${MAX_CSV_COLUMNS}; keep the columns the prompt needs`,
    );
  }
  const headers = records[0].map((h) => h.trim());
  const seen = new Set<string>();
  headers.forEach((header, index) => {
    if (!header) throw new SvcError('invalid_input', `${field}: header column ${index + 1} is empty`);
    if (seen.has(header)) throw new SvcError('invalid_input', `${field}: header "${header}" appears twice`);
    seen.add(header);
  });
  const rows = records.slice(1).map((record, index) => {
    if (record.length === 1 && record[0] === '') return undefined;
    if (record.length > headers.length) {
      throw new SvcError(
        'invalid_input',
        `${field}: row ${index + 1} has ${record.length} fields but the header has ${headers.length}`,
      );
    }
    return Object.fromEntries(headers.map((h, i) => [h, record[i] ?? '']));
  });
  return { headers, rows: rows.filter((r): r is Record<string, string> => r !== undefined) };
}

function parseRecords(text: string, field: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (quoted) {
      if (char === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      if (char === '\n') line++;
      cell += char;
      i++;
      continue;
    }
    if (char === '"' && cell === '') {
      quoted = true;
      i++;
      continue;
    }
    if (char === ',') {
      record.push(cell);
      cell = '';
      i++;
      continue;
    }
    if (char === '\r' || char === '\n') {
      record.push(cell);
      records.push(record);
      record = [];
      cell = '';
      i += char === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line++;
      continue;
    }
    cell += char;
    i++;
  }
  if (quoted)
    throw new SvcError('invalid_input', `${field}: a quoted field opened before line ${line} never closes`);
  if (cell !== '' || record.length) {
    record.push(cell);
    records.push(record);
  }
  return records;
}

/** Serialize rows under these headers; fields with commas, quotes or newlines are quoted. */
export function toCsv(headers: string[], rows: Record<string, unknown>[]): string {
  const quote = (value: unknown) => {
    const text = value === null || value === undefined ? '' : String(value);
    return /[",\r\n]/.test(text) || /^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return `${[headers.map(quote).join(','), ...rows.map((row) => headers.map((h) => quote(row[h])).join(','))].join('\n')}\n`;
}
