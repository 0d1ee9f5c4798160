/**
 * Reading a zod input schema's shape, for surfaces that turn text into typed input (HTTP query
 * strings, CLI options): the inner type of a field behind optional/nullable/default/pipe wrappers,
 * and the fields of an object schema.
 * @module
 */
import { z } from 'zod';

/** The type a field really holds: optional, nullable, default, prefault and pipes peeled off. */
export function unwrapSchema(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodNullable ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault
    ) {
      s = (s as unknown as { unwrap(): z.ZodType }).unwrap();
    } else if (s instanceof z.ZodPipe) {
      s = (s as unknown as { in: z.ZodType }).in;
    } else break;
  }
  return s;
}

/** The fields of an object schema (empty for anything else). */
export function objectFields(schema: z.ZodType): Record<string, z.ZodType> {
  const inner = unwrapSchema(schema);
  return inner instanceof z.ZodObject ? (inner.shape as Record<string, z.ZodType>) : {};
}
