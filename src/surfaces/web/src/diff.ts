/**
 * Unified diffs (as tools put them in permission details and results) parsed into files and
 * rows, for the unified and the side-by-side views.
 * @module
 */

export interface DiffLine {
  kind: 'context' | 'add' | 'del' | 'note';
  text: string;
  oldNo?: number;
  newNo?: number;
}

export interface DiffHunk {
  header: string;
  lines: DiffLine[];
}

export interface DiffFile {
  oldPath: string;
  newPath: string;
  hunks: DiffHunk[];
  added: number;
  removed: number;
}

/** One side-by-side row: the old line (left) and the new line (right); either may be empty. */
export interface SplitRow {
  left?: DiffLine;
  right?: DiffLine;
}

export function parseDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  let file: DiffFile | undefined;
  let hunk: DiffHunk | undefined;
  let oldNo = 0;
  let newNo = 0;
  const lines = text.replace(/\n$/, '').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) {
      file = {
        oldPath: stripPrefix(line.slice(4)),
        newPath: stripPrefix(lines[i + 1].slice(4)),
        hunks: [],
        added: 0,
        removed: 0,
      };
      files.push(file);
      hunk = undefined;
      i++;
      continue;
    }
    const header = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (header) {
      if (!file) {
        file = { oldPath: '', newPath: '', hunks: [], added: 0, removed: 0 };
        files.push(file);
      }
      oldNo = Number(header[1]);
      newNo = Number(header[2]);
      hunk = { header: line, lines: [] };
      file.hunks.push(hunk);
      continue;
    }
    if (!hunk || !file) continue;
    if (line.startsWith('+')) {
      hunk.lines.push({ kind: 'add', text: line.slice(1), newNo: newNo++ });
      file.added++;
    } else if (line.startsWith('-')) {
      hunk.lines.push({ kind: 'del', text: line.slice(1), oldNo: oldNo++ });
      file.removed++;
    } else if (line.startsWith('\\')) {
      hunk.lines.push({ kind: 'note', text: line });
    } else {
      hunk.lines.push({ kind: 'context', text: line.slice(1), oldNo: oldNo++, newNo: newNo++ });
    }
  }
  return files.filter((f) => f.hunks.length > 0);
}

/** Pairs each run of removed lines with the run of added lines after it. */
export function splitRows(hunk: DiffHunk): SplitRow[] {
  const rows: SplitRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ left: dels[i], right: adds[i] });
    dels = [];
    adds = [];
  };
  for (const line of hunk.lines) {
    if (line.kind === 'del') {
      if (adds.length) flush();
      dels.push(line);
    } else if (line.kind === 'add') adds.push(line);
    else {
      flush();
      rows.push(line.kind === 'note' ? { left: line } : { left: line, right: line });
    }
  }
  flush();
  return rows;
}

export function fileLabel(file: DiffFile): string {
  if (file.oldPath === '/dev/null' || file.oldPath === '') return file.newPath || 'new file';
  if (file.newPath === '/dev/null') return `${file.oldPath} (deleted)`;
  return file.oldPath === file.newPath ? file.newPath : `${file.oldPath} → ${file.newPath}`;
}

function stripPrefix(path: string): string {
  const clean = path.split('\t')[0].trim();
  return clean.replace(/^[ab]\//, '');
}
