/**
 * Default human rendering of a JSON result for CLI output without --json: indented key/value
 * lines, arrays of flat objects as rows. Not parity JSON; just readable.
 * @module
 */

export function renderText(value: unknown, indent = 0): string {
  const pad = ' '.repeat(indent);
  if (value === null || value === undefined) return `${pad}-`;
  if (typeof value !== 'object') return `${pad}${String(value)}`;
  if (Array.isArray(value)) {
    if (value.length === 0) return `${pad}(none)`;
    return value
      .map((item) => {
        if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
          const flat = Object.entries(item).every(([, v]) => v === null || typeof v !== 'object');
          if (flat)
            return `${pad}- ${Object.entries(item)
              .map(([k, v]) => `${k}=${fmt(v)}`)
              .join('  ')}`;
          return `${pad}-\n${renderText(item, indent + 2)}`;
        }
        return `${pad}- ${fmt(item)}`;
      })
      .join('\n');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return `${pad}(empty)`;
  const width = Math.min(32, Math.max(...entries.map(([k]) => k.length)));
  return entries
    .map(([k, v]) => {
      if (
        v !== null &&
        typeof v === 'object' &&
        (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0)
      ) {
        return `${pad}${k}:\n${renderText(v, indent + 2)}`;
      }
      return `${pad}${k.padEnd(width)}  ${fmt(v)}`;
    })
    .join('\n');
}

function fmt(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (Array.isArray(v)) return v.length === 0 ? '[]' : JSON.stringify(v);
  if (typeof v === 'object') return Object.keys(v).length === 0 ? '{}' : JSON.stringify(v);
  return String(v);
}
