/**
 * A diff, unified or side by side (side by side by default on wide screens), with line numbers;
 * long diffs are folded after a few hundred lines.
 * @module
 */
import { useState } from 'preact/hooks';
import { type DiffFile, type DiffLine, fileLabel, splitRows } from '../diff';
import { outsideText } from './common';

const FOLD_AT = 400;

export function DiffView({ files }: { files: DiffFile[] }) {
  const [split, setSplit] = useState(() => matchMedia('(min-width: 900px)').matches);
  const [all, setAll] = useState(false);
  const total = files.reduce((n, f) => n + f.hunks.reduce((m, h) => m + h.lines.length, 0), 0);
  let budget = all ? Number.POSITIVE_INFINITY : FOLD_AT;
  return (
    <div class="diff">
      <div class="diff-bar">
        <button type="button" onClick={() => setSplit(!split)}>
          {split ? 'Show unified' : 'Show side by side'}
        </button>
      </div>
      {files.map((file, f) => (
        <div class="diff-file" key={f}>
          <div class="diff-name">
            <span>{outsideText(fileLabel(file))}</span>
            <span class="add">+{file.added}</span>
            <span class="del">-{file.removed}</span>
          </div>
          <div class="diff-scroll">
            <table class={split ? 'diff-table split' : 'diff-table'}>
              {file.hunks.map((hunk, h) => {
                if (budget <= 0) return null;
                const rows = split ? splitRows(hunk) : hunk.lines;
                const shown = rows.slice(0, budget);
                budget -= shown.length;
                return (
                  <tbody key={h}>
                    <tr class="hunk">
                      <td colSpan={split ? 4 : 3}>{hunk.header}</td>
                    </tr>
                    {split
                      ? (shown as ReturnType<typeof splitRows>).map((row, i) => (
                          <tr key={i}>
                            <Cells line={row.left} side="old" />
                            <Cells line={row.right} side="new" />
                          </tr>
                        ))
                      : (shown as DiffLine[]).map((line, i) => (
                          <tr key={i} class={line.kind}>
                            <td class="no">{line.oldNo ?? ''}</td>
                            <td class="no">{line.newNo ?? ''}</td>
                            <td class="code-cell">
                              {marker(line)}
                              {line.text}
                            </td>
                          </tr>
                        ))}
                  </tbody>
                );
              })}
            </table>
          </div>
        </div>
      ))}
      {!all && total > FOLD_AT ? (
        <button type="button" onClick={() => setAll(true)}>
          Show all {total} diff lines
        </button>
      ) : null}
    </div>
  );
}

function Cells({ line, side }: { line?: DiffLine; side: 'old' | 'new' }) {
  if (!line) return <td class="empty" colSpan={2} />;
  const no = side === 'old' ? line.oldNo : line.newNo;
  return (
    <>
      <td class={`no ${line.kind}`}>{no ?? ''}</td>
      <td class={`code-cell ${line.kind}`}>
        {marker(line)}
        {line.text}
      </td>
    </>
  );
}

function marker(line: DiffLine): string {
  return line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : line.kind === 'note' ? '' : ' ';
}
