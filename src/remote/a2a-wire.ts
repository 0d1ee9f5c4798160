/**
 * A2A wire shapes (Agent2Agent protocol, the 0.3 JSON-RPC generation: `message/send`,
 * `tasks/get`, `tasks/cancel`; card at `/.well-known/agent-card.json`, formerly `agent.json`).
 * Peer payloads get minimal, lenient schemas: only the fields we read, unknown keys allowed. A 1.0
 * card (`supportedInterfaces[]` instead of a top-level `url`) is read too.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../util/lazy';

export const A2A_PROTOCOL_VERSION = '0.3.0';
export const CARD_PATH = '/.well-known/agent-card.json';
export const LEGACY_CARD_PATH = '/.well-known/agent.json';
export const RPC_PATH = '/a2a';

/** JSON-RPC 2.0 and A2A error codes. */
export const RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotSupported: -32003,
  unsupportedOperation: -32004,
} as const;

export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'canceled'
  | 'failed'
  | 'rejected'
  | 'auth-required'
  | 'unknown';

export const TERMINAL_STATES: ReadonlySet<string> = new Set(['completed', 'canceled', 'failed', 'rejected']);

const skillSchema = lazy(() =>
  z.looseObject({
    id: z.string(),
    name: z.string().nullish(),
    description: z.string().nullish(),
    tags: z.array(z.string()).nullish(),
    examples: z.array(z.string()).nullish(),
  }),
);

/** The card fields a client needs: who it is, where to send JSON-RPC, what it can do. */
export const agentCardSchema = lazy(() =>
  z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    url: z.string().nullish(),
    version: z.string().nullish(),
    protocolVersion: z.string().nullish(),
    preferredTransport: z.string().nullish(),
    additionalInterfaces: z.array(z.looseObject({ url: z.string(), transport: z.string() })).nullish(),
    // 1.0 cards list their endpoints here instead of `url`.
    supportedInterfaces: z
      .array(z.looseObject({ url: z.string(), protocolBinding: z.string().nullish() }))
      .nullish(),
    capabilities: z.looseObject({ streaming: z.boolean().nullish() }).nullish(),
    skills: z.array(skillSchema()).nullish(),
  }),
);

export type AgentCardWire = z.infer<ReturnType<typeof agentCardSchema>>;

export interface CardSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
}

const partSchema = lazy(() =>
  z.looseObject({
    kind: z.string().nullish(),
    type: z.string().nullish(),
    text: z.string().nullish(),
    data: z.unknown().optional(),
  }),
);

export const messageSchema = lazy(() =>
  z.looseObject({
    role: z.string().nullish(),
    parts: z.array(partSchema()).nullish(),
    messageId: z.string().nullish(),
    taskId: z.string().nullish(),
    contextId: z.string().nullish(),
    kind: z.string().nullish(),
  }),
);

export const taskSchema = lazy(() =>
  z.looseObject({
    kind: z.string().nullish(),
    id: z.string(),
    contextId: z.string().nullish(),
    status: z.looseObject({
      state: z.string(),
      message: messageSchema().nullish(),
      timestamp: z.string().nullish(),
    }),
    artifacts: z
      .array(
        z.looseObject({
          artifactId: z.string().nullish(),
          name: z.string().nullish(),
          parts: z.array(partSchema()).nullish(),
        }),
      )
      .nullish(),
  }),
);

export type TaskWire = z.infer<ReturnType<typeof taskSchema>>;
export type MessageWire = z.infer<ReturnType<typeof messageSchema>>;

export const rpcResponseSchema = lazy(() =>
  z.looseObject({
    jsonrpc: z.string().nullish(),
    id: z.union([z.string(), z.number(), z.null()]).nullish(),
    result: z.unknown().optional(),
    error: z.looseObject({ code: z.number(), message: z.string(), data: z.unknown().optional() }).nullish(),
  }),
);

/** The text of a message's or artifact's parts (text parts, and JSON of data parts). */
export function partsText(
  parts: readonly z.infer<ReturnType<typeof partSchema>>[] | null | undefined,
): string {
  return (parts ?? [])
    .map((part) => {
      if (typeof part.text === 'string') return part.text;
      if (part.data !== undefined) return JSON.stringify(part.data);
      return '';
    })
    .filter(Boolean)
    .join('\n');
}

/** Where a card takes JSON-RPC: 0.3 `url` (+ `additionalInterfaces`), or a 1.0 interface. */
export function rpcUrlOf(card: AgentCardWire, cardUrl: string): string | undefined {
  const jsonrpc = (transport: string | null | undefined) =>
    (transport ?? 'JSONRPC').toUpperCase() === 'JSONRPC';
  if (card.url && jsonrpc(card.preferredTransport)) return new URL(card.url, cardUrl).toString();
  const extra = card.additionalInterfaces?.find((i) => jsonrpc(i.transport));
  if (extra) return new URL(extra.url, cardUrl).toString();
  const v1 = card.supportedInterfaces?.find((i) => jsonrpc(i.protocolBinding));
  if (v1) return new URL(v1.url, cardUrl).toString();
  return undefined;
}

export function cardSkills(card: AgentCardWire): CardSkill[] {
  return (card.skills ?? []).map((skill) => ({
    id: skill.id,
    name: skill.name ?? skill.id,
    description: skill.description ?? '',
    tags: skill.tags ?? [],
  }));
}

/** How well a skill set matches a capability phrase: shared words, weighted by where they occur. */
export function capabilityScore(
  skills: readonly CardSkill[],
  card: { name: string; description: string },
  capability: string,
): number {
  const wanted = words(capability);
  if (wanted.length === 0) return 0;
  let score = 0;
  for (const word of wanted) {
    let best = 0;
    for (const skill of skills) {
      if (words(skill.id).includes(word) || skill.tags.some((tag) => words(tag).includes(word)))
        best = Math.max(best, 3);
      else if (words(skill.name).includes(word)) best = Math.max(best, 2);
      else if (words(skill.description).includes(word)) best = Math.max(best, 1);
    }
    if (best === 0 && (words(card.name).includes(word) || words(card.description).includes(word))) best = 0.5;
    score += best;
  }
  return score;
}

const STOP = new Set([
  'a',
  'an',
  'the',
  'and',
  'or',
  'of',
  'for',
  'to',
  'in',
  'on',
  'with',
  'that',
  'can',
  'agent',
]);

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !STOP.has(w))
    .map((w) => (w.length > 4 && w.endsWith('s') ? w.slice(0, -1) : w));
}
