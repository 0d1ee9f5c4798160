/**
 * Field provenance: every effective config field, its (redacted) value and where it came from.
 * Shared by `svc config explain`, `get_config` and `get_config_field_provenance`.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { isSentinel, maskSecret, maskSecretArgs, maskUrlSecrets, type Redactor } from '../redact';
import { objectFields, unwrapSchema } from '../util/zod-shape';
import type { ConfigSource, LoadedConfig } from './load';
import { configSchema } from './schema';

export interface ExplainedField {
  key: string;
  value: unknown;
  source: string;
  source_kind: ConfigSource['kind'];
  /** A workspace key the trust gate dropped (config/trust.ts): not in the effective config. */
  dropped?: true;
}

export function explainConfig(loaded: LoadedConfig, redactor: Redactor, key?: string): ExplainedField[] {
  const fields: ExplainedField[] = [];
  walk(loaded.config, [], (path, value) => {
    const k = path.join('.');
    const source = loaded.provenance.get(k) ?? inheritedSource(loaded, path);
    const last = path[path.length - 1] ?? '';
    fields.push({
      key: k,
      value: (redactor.value({ [last]: maskConfigValue(path, value, redactor) }) as Record<string, unknown>)[
        last
      ],
      source: source ? (source.path ?? source.label) : 'default',
      source_kind: source?.kind ?? 'default',
    });
  });
  for (const k of loaded.trust?.dropped ?? [])
    fields.push({
      key: k.key,
      value: redactor.string(k.detail),
      source: `${k.file ?? 'workspace'} (dropped: workspace not trusted; svc trust ${loaded.trust?.workspace})`,
      source_kind: 'workspace',
      dropped: true,
    });
  if (!key) return fields;
  const matches = fields.filter((f) => f.key === key || f.key.startsWith(`${key}.`));
  if (matches.length === 0) {
    // A field the schema knows but nothing sets (e.g. models.large with no default): unset.
    if (isSchemaLeaf(configSchema(), key.split('.')))
      return [{ key, value: null, source: 'default (unset)', source_kind: 'default' }];
    throw new SvcError('not_found', `key: no config field "${key}"; see svc config explain for the list`);
  }
  return matches;
}

/**
 * A config value as a readout shows it. The redactor masks fields named like secrets and values it
 * has learned; these credentials have neither: a URL's password and `?token=`, an MCP server's
 * `env` (credentials by nature, whatever their names; a `keychain:` reference stays shown) and the
 * value of an `args` flag like `--api-key`.
 */
export function maskConfigValue(path: readonly string[], value: unknown, redactor: Redactor): unknown {
  if (path[0] === 'mcp' && path[2] === 'env' && path.length === 4 && typeof value === 'string') {
    // A value from `${ENV}` is one the redactor knows: it stays fully redacted, as before.
    const known = redactor.string(value) !== value;
    return value === '' || known || isSentinel(value) ? value : maskSecret(value);
  }
  if (path[0] === 'mcp' && path[2] === 'args' && path.length === 3 && Array.isArray(value))
    return maskSecretArgs(value.map(String)).map(maskUrlSecrets);
  return maskUrls(value);
}

function maskUrls(value: unknown): unknown {
  if (typeof value === 'string') return maskUrlSecrets(value);
  if (Array.isArray(value)) return value.map(maskUrls);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskUrls(v)]));
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

/** Whether the schema has a field at this path (a table key of a record counts as any name). */
function isSchemaLeaf(schema: z.ZodType, path: readonly string[]): boolean {
  let node: z.ZodType = schema;
  for (const part of path) {
    const inner = unwrapSchema(node);
    if (inner instanceof z.ZodRecord) node = inner.valueType as z.ZodType;
    else {
      const field = objectFields(inner)[part];
      if (!field) return false;
      node = field;
    }
  }
  return path.length > 0;
}
