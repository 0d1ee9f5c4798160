/**
 * Field provenance: every effective config field, its (redacted) value and where it came from.
 * Shared by `svc config explain`, `get_config` and `get_config_field_provenance`.
 * @module
 */
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import type { ConfigSource, LoadedConfig } from './load';

export interface ExplainedField {
  key: string;
  value: unknown;
  source: string;
  source_kind: ConfigSource['kind'];
}

export function explainConfig(loaded: LoadedConfig, redactor: Redactor, key?: string): ExplainedField[] {
  const fields: ExplainedField[] = [];
  walk(loaded.config, [], (path, value) => {
    const k = path.join('.');
    const source = loaded.provenance.get(k) ?? inheritedSource(loaded, path);
    const last = path[path.length - 1] ?? '';
    fields.push({
      key: k,
      value: (redactor.value({ [last]: value }) as Record<string, unknown>)[last],
      source: source ? (source.path ?? source.label) : 'default',
      source_kind: source?.kind ?? 'default',
    });
  });
  if (!key) return fields;
  const matches = fields.filter((f) => f.key === key || f.key.startsWith(`${key}.`));
  if (matches.length === 0) {
    throw new SvcError('not_found', `key: no config field "${key}"; see svc config explain for the list`);
  }
  return matches;
}

/** Leaves are scalars, arrays and empty tables. */
function walk(node: unknown, path: string[], visit: (path: string[], value: unknown) => void) {
  if (node !== null && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length > 0) {
    for (const [k, v] of Object.entries(node)) if (v !== undefined) walk(v, [...path, k], visit);
    return;
  }
  if (path.length > 0) visit(path, node);
}

function inheritedSource(loaded: LoadedConfig, path: string[]): ConfigSource | undefined {
  // A whole array or table set at a parent path (e.g. an inline table) owns its leaves.
  for (let i = path.length - 1; i > 0; i--) {
    const s = loaded.provenance.get(path.slice(0, i).join('.'));
    if (s) return s;
  }
  return undefined;
}
