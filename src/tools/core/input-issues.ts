/**
 * An invalid input reads the same on every surface: `<tool>: <field>: expected <what>, received
 * <what came>` (several issues joined with `; `; an unknown key is `unknown field x`), with
 * `details.issues[]` (`{ path, expected, received, message }`). Surfaces that turn text into
 * typed values before validation (HTTP query strings, CLI options) report a value that does not
 * convert with the same words (`invalidValue`).
 * @module
 */
import type { z } from 'zod';
import { SvcError } from '../../errors';
import { isSecretKey, REDACTED } from '../../redact';
import type { InputIssue } from './types';

/** The issues of a failed parse, each with what was expected and what came. */
export function inputIssues(error: z.ZodError, raw: unknown): InputIssue[] {
  return error.issues.map((issue) => describeIssue(issue as ZodIssue, raw));
}

/** The one message of a list of issues (without the tool name). */
export function formatIssues(issues: readonly InputIssue[]): string {
  return issues.map((issue) => issue.message).join('; ');
}

/**
 * The invalid_input error of a tool's input: the tool, each field, what was expected and what
 * came. With `lead`, that field's issue opens the message as `invalid <field>: <tool>: expected …`
 * (HTTP names a bad query parameter first, spec DASH-58), the field named once.
 */
export function invalidInput(tool: string, issues: InputIssue[], lead?: string): SvcError {
  const first = lead === undefined ? undefined : issues.find((i) => i.path === lead);
  const message = first
    ? [
        `invalid ${first.path}: ${tool}: expected ${first.expected}, received ${first.received}`,
        ...issues.filter((i) => i !== first).map((i) => i.message),
      ].join('; ')
    : `${tool}: ${formatIssues(issues)}`;
  return new SvcError('invalid_input', message, { details: { tool, issues } });
}

/** One issue for a value a surface could not convert (`limit=abc`, `--limit abc`). */
export function conversionIssue(path: string, expected: string, value: unknown): InputIssue {
  return issue(path, expected, describeValue(value));
}

export function issue(path: string, expected: string, received: string): InputIssue {
  const head = path ? `${path}: ` : '';
  return { path, expected, received, message: `${head}expected ${expected}, received ${received}` };
}

type ZodIssue = z.core.$ZodIssue;

function describeIssue(zodIssue: ZodIssue, raw: unknown): InputIssue {
  const path = zodIssue.path.map(String).join('.');
  const last = zodIssue.path.at(-1);
  // A secret-named field's value is never echoed back, not even a wrong one.
  const secret = typeof last === 'string' && isSecretKey(last);
  const value = secret ? REDACTED : valueAt(raw, zodIssue.path);
  switch (zodIssue.code) {
    case 'unrecognized_keys': {
      const keys = zodIssue.keys;
      const what = `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
      return {
        path,
        expected: 'no such field',
        received: keys.join(', '),
        message: path ? `${path}: ${what}` : what,
      };
    }
    case 'invalid_type':
      return issue(path, typeName(zodIssue.expected), kindOf(value));
    case 'invalid_value':
      return issue(path, oneOf(zodIssue.values), describeValue(value));
    case 'too_small':
      return issue(
        path,
        bound('at least', 'more than', zodIssue.minimum, zodIssue.inclusive, zodIssue.origin),
        describeValue(value),
      );
    case 'too_big':
      return issue(
        path,
        bound('at most', 'less than', zodIssue.maximum, zodIssue.inclusive, zodIssue.origin),
        describeValue(value),
      );
    case 'invalid_format':
      return issue(path, formatName(zodIssue), describeValue(value));
    case 'not_multiple_of':
      return issue(path, `a multiple of ${String(zodIssue.divisor)}`, describeValue(value));
    case 'invalid_union':
      return issue(path, unionExpected(zodIssue), kindOf(value));
    default: {
      // custom refinements, record keys, map/set elements: the schema's own words.
      const head = path ? `${path}: ` : '';
      return {
        path,
        expected: zodIssue.message,
        received: describeValue(value),
        message: `${head}${zodIssue.message}`,
      };
    }
  }
}

function typeName(expected: string): string {
  if (expected === 'int') return 'integer';
  return expected;
}

function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  return shown.length === 1 ? shown[0] : `one of ${shown.join(', ')}`;
}

function bound(
  inclusiveWord: string,
  exclusiveWord: string,
  limit: unknown,
  inclusive: boolean | undefined,
  origin: string,
): string {
  const n = Number(limit);
  const word = inclusive === false ? exclusiveWord : inclusiveWord;
  switch (origin) {
    case 'string':
      return `${word} ${n} character${n === 1 ? '' : 's'}`;
    case 'array':
    case 'set':
      return `${word} ${n} item${n === 1 ? '' : 's'}`;
    case 'object':
    case 'map':
    case 'record':
      return `${word} ${n} entr${n === 1 ? 'y' : 'ies'}`;
    default:
      return `${word} ${String(limit)}`;
  }
}

function formatName(zodIssue: Extract<ZodIssue, { code: 'invalid_format' }>): string {
  const pattern = (zodIssue as { pattern?: string }).pattern;
  if (zodIssue.format === 'regex' && pattern) return `text matching ${pattern}`;
  if (zodIssue.format === 'starts_with')
    return `text starting with ${JSON.stringify((zodIssue as { prefix?: string }).prefix)}`;
  if (zodIssue.format === 'ends_with')
    return `text ending with ${JSON.stringify((zodIssue as { suffix?: string }).suffix)}`;
  if (zodIssue.format === 'includes')
    return `text including ${JSON.stringify((zodIssue as { includes?: string }).includes)}`;
  return `a valid ${zodIssue.format}`;
}

/** A union's expected shapes, when its branches failed on the type of the value itself. */
function unionExpected(zodIssue: Extract<ZodIssue, { code: 'invalid_union' }>): string {
  const types = new Set<string>();
  for (const branch of zodIssue.errors) {
    for (const inner of branch) {
      if (inner.path.length !== 0) continue;
      if (inner.code === 'invalid_type') types.add(typeName(inner.expected));
      else if (inner.code === 'invalid_value') types.add(oneOf(inner.values));
    }
  }
  return types.size ? [...types].join(' or ') : 'one of the accepted shapes';
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let value = raw;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** The kind of a value: `number`, `string`, `array`, `object`, `null`, `nothing`. */
function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A value as an error shows it: `"abc"`, `3`, `true`, `an array of 2`, `an object`, `nothing`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return String(value);
}
