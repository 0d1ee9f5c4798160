/**
 * Query strings are text; tool inputs are typed. Coerce each query value by the type of its input
 * field; a value that does not convert is an input issue named by its field (the caller reports
 * it as `invalid recent_runs_limit: …`, spec DASH-58).
 * @module
 */
import { z } from 'zod';
import { conversionIssue } from '../../tools/core/input-issues';
import type { InputIssue } from '../../tools/core/types';
import { objectFields, unwrapSchema } from '../../util/zod-shape';

type Kind = 'number' | 'integer' | 'boolean' | 'array' | 'string' | 'unknown';

export function fieldKinds(schema: z.ZodType): Map<string, Kind> {
  const kinds = new Map<string, Kind>();
  const shape = objectFields(schema);
  for (const [key, field] of Object.entries(shape)) kinds.set(key, kindOf(field as z.ZodType));
  return kinds;
}

/** A decimal number as a query parameter writes one: `-12`, `3.5`, `+4`. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)$/;

export function coerceQuery(
  schema: z.ZodType,
  query: Record<string, string[]>,
): { values: Record<string, unknown>; issues: InputIssue[] } {
  const kinds = fieldKinds(schema);
  const out: Record<string, unknown> = {};
  const issues: InputIssue[] = [];
  for (const [key, values] of Object.entries(query)) {
    const kind = kinds.get(key);
    if (kind === undefined) continue; // unknown query parameters are ignored (cache busters, tracing)
    const value = values[values.length - 1];
    switch (kind) {
      case 'integer':
      case 'number': {
        if (value.trim() === '') continue;
        // Decimal only: `Number` also reads `0x10`, `0b1`, `1e3` and `Infinity`.
        const n = DECIMAL.test(value.trim()) ? Number(value) : Number.NaN;
        if (!Number.isFinite(n) || (kind === 'integer' && !Number.isInteger(n))) {
          issues.push(conversionIssue(key, kind, value));
        } else out[key] = n;
        break;
      }
      case 'boolean': {
        const v = value.trim().toLowerCase();
        if (['1', 'true', 'yes', 'on', ''].includes(v)) out[key] = true;
        else if (['0', 'false', 'no', 'off'].includes(v)) out[key] = false;
        else issues.push(conversionIssue(key, 'boolean', value));
        break;
      }
      case 'array':
        out[key] = values.flatMap((v) => v.split(',')).filter((v) => v !== '');
        break;
      default:
        out[key] = value;
    }
  }
  return { values: out, issues };
}

function kindOf(schema: z.ZodType): Kind {
  const s = unwrapSchema(schema);
  if (s instanceof z.ZodNumber)
    return s.format === 'safeint' || (s as { isInt?: boolean }).isInt ? 'integer' : 'number';
  if (s instanceof z.ZodBoolean) return 'boolean';
  if (s instanceof z.ZodArray) return 'array';
  if (s instanceof z.ZodString || s instanceof z.ZodEnum || s instanceof z.ZodLiteral) return 'string';
  return 'unknown';
}
