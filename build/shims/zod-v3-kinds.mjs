// Build shim (tsdown.config.ts): what @ai-sdk/provider-utils takes from `zod/v3` — the type-kind
// names its zod 3 → JSON Schema converter compares against — without loading zod 3 itself
// (svc's schemas are zod 4 or plain JSON Schema, so that converter never runs).
const kinds =
  'ZodString ZodNumber ZodNaN ZodBigInt ZodBoolean ZodDate ZodSymbol ZodUndefined ZodNull ZodAny ZodUnknown ZodNever ZodVoid ZodArray ZodObject ZodUnion ZodDiscriminatedUnion ZodIntersection ZodTuple ZodRecord ZodMap ZodSet ZodFunction ZodLazy ZodLiteral ZodEnum ZodEffects ZodNativeEnum ZodOptional ZodNullable ZodDefault ZodCatch ZodPromise ZodBranded ZodPipeline ZodReadonly';
export const ZodFirstPartyTypeKind = Object.freeze(Object.fromEntries(kinds.split(' ').map((k) => [k, k])));
