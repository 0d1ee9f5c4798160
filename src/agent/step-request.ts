/**
 * What the step driver (./step-driver.ts) sends each step besides its settings: the prompt,
 * converted once and extended step by step, and the step's tools, prepared once per tool set and
 * sent tools.
 * @module
 */
import type { LanguageModelV3, LanguageModelV3FunctionTool, LanguageModelV3Message } from '@ai-sdk/provider';
import type { ModelMessage, ToolSet } from 'ai';
import { sameItems } from '../util/arrays';

/** What these helpers need of the driver. */
export interface StepRequestSource {
  internal: typeof import('ai/internal');
  model: LanguageModelV3;
  tools: ToolSet;
  signal: AbortSignal;
  /**
   * Deferred exposure: whether a tool goes into the request in full (all tools stay callable).
   * It answers the same for a name every time (the steps' tool lists are kept by it); what a run
   * changes is `calledTools`.
   */
  sendsTool?: (name: string) => boolean;
  /**
   * The tools called in this run: sent in full from then on, whatever `sendsTool` says. Only ever
   * added to (its size tells whether it changed).
   */
  calledTools?: ReadonlySet<string>;
}

let internal: typeof import('ai/internal') | undefined;

/**
 * The SDK's internal helpers (`ai/internal`), loaded by the first run: an `import()` of a module
 * already loaded still goes through the ESM loader each time (≈ 2 µs and a few promises a run).
 */
export async function sdkInternal(): Promise<typeof import('ai/internal')> {
  if (!internal) internal = await import('ai/internal');
  return internal;
}

let sdk: typeof import('ai') | undefined;

/** The AI SDK once a run loaded it (`loadSdk`): a run takes it with no `import()` and no promise. */
export const keptSdk = (): typeof import('ai') | undefined => sdk;

/** Loads the AI SDK (`ai`) and keeps it for `keptSdk`; heavy, so only a run's first step loads it. */
export async function loadSdk(): Promise<typeof import('ai')> {
  sdk = await import('ai');
  return sdk;
}

/**
 * The step's prompt: the history converted once (the SDK's `convertToLanguageModelPrompt`), each
 * step's new messages converted as they come; messages the run's preparation replaced (a
 * compaction, a trimmed window) are converted whole.
 */
export class PromptCache {
  private converted: LanguageModelV3Message[] = [];
  private count = 0;
  private urls: Record<string, RegExp[]> | undefined;
  /** The system message, the same object while its text stays (the provider keys its bytes by it). */
  private head: LanguageModelV3Message | undefined;

  constructor(
    private readonly o: StepRequestSource,
    private readonly messages: ModelMessage[],
  ) {}

  async for(system: string, replaced: ModelMessage[] | undefined): Promise<LanguageModelV3Message[]> {
    if (this.head?.content !== system) this.head = systemMessage(system);
    const head = this.head;
    if (replaced) return [head, ...(await this.convert(replaced))];
    if (this.count < this.messages.length) {
      const fresh = await this.convert(this.messages.slice(this.count));
      this.converted = [...this.converted, ...fresh];
      this.count = this.messages.length;
    }
    return [head, ...this.converted];
  }

  private async convert(messages: ModelMessage[]): Promise<LanguageModelV3Message[]> {
    this.urls ??= await this.o.model.supportedUrls;
    return this.o.internal.convertToLanguageModelPrompt({
      prompt: { messages },
      supportedUrls: this.urls,
      download: undefined,
      abortSignal: this.o.signal,
    });
  }
}

/**
 * System messages by their text, shared by the runs of the process. The provider converts and
 * encodes a prompt message once and keeps its bytes by the message object
 * (../providers/prompt-messages.ts); every compat request is a run with the same system prompt, so
 * one object for one text is one encoding of it, not one a run. A message is never changed once
 * in a prompt, and its text is its whole content: a changed prompt is another text, another
 * message. The most recent few are kept (each with its encoded bytes).
 */
const systemMessages = new Map<string, LanguageModelV3Message>();
const MAX_SYSTEM_MESSAGES = 8;
/** A longer text is not kept past its run (eight of them, with their bytes, would be megabytes). */
const MAX_SHARED_CHARS = 256 * 1024;
let lastSystem: LanguageModelV3Message | undefined;

export function systemMessage(text: string): LanguageModelV3Message {
  // The same text as the last run's, nearly always (a compat request's runs): no Map look-up.
  if (lastSystem?.content === text) return lastSystem;
  if (text.length > MAX_SHARED_CHARS) return { role: 'system', content: text };
  let message = systemMessages.get(text);
  if (message) systemMessages.delete(text);
  else message = { role: 'system', content: text };
  // Most recent last: the first key is the one least recently used.
  systemMessages.set(text, message);
  if (systemMessages.size > MAX_SYSTEM_MESSAGES)
    systemMessages.delete(systemMessages.keys().next().value as string);
  lastSystem = message;
  return message;
}

/**
 * The step's tools and tool choice as the model gets them (the SDK's `prepareToolsAndToolChoice`),
 * one tool array per tool set and sent tools, reused on every step (so the request body's encoded
 * tool list is reused too, ../providers/request-body.ts). Tools keep the tool set's order.
 */
const requestToolCache = new WeakMap<ToolSet, Map<string, LanguageModelV3FunctionTool[] | undefined>>();

export async function requestTools(
  o: StepRequestSource,
  active: ReadonlySet<string> | undefined,
): Promise<LanguageModelV3FunctionTool[] | undefined> {
  const fixed = o.sendsTool;
  const called = o.calledTools;
  if (!fixed || !called?.size) {
    // The names follow from the tool set, the active Set and the filter alone, and the run's
    // preparation hands the same Set for the same tools (./active-tools.ts `activeNames`; none
    // when every tool is active), the runs the same filter for the same tool set and exposure
    // (./tool-exposure.ts `inFullAt`): the list is known without going over the names again
    // (≈ 170 tools asked one by one, every step).
    const bySet = listsBySet.get(o.tools);
    if (bySet && bySet.active === active && bySet.send === fixed) return bySet.list;
    const list = await namedTools(o, active, fixed);
    listsBySet.set(o.tools, { active, send: fixed, list });
    return list;
  }
  // A run that has called tools sends them in full too: its list is kept by its called Set while
  // that keeps its size (it is only added to).
  const byCalls = listsByCalls.get(called);
  if (
    byCalls?.size === called.size &&
    byCalls.tools === o.tools &&
    byCalls.active === active &&
    byCalls.send === fixed
  )
    return byCalls.list;
  const list = await namedTools(o, active, (name) => called.has(name) || fixed(name));
  listsByCalls.set(called, { size: called.size, tools: o.tools, active, send: fixed, list });
  return list;
}

/** The step's tools for the names the active Set and the filter let through. */
async function namedTools(
  o: StepRequestSource,
  active: ReadonlySet<string> | undefined,
  send: StepRequestSource['sendsTool'],
): Promise<LanguageModelV3FunctionTool[] | undefined> {
  const names = Object.keys(o.tools).filter((name) => (!active || active.has(name)) && (!send || send(name)));
  let perSet = requestToolCache.get(o.tools);
  if (!perSet) {
    perSet = new Map();
    requestToolCache.set(o.tools, perSet);
  }
  // The list returned last for this tool set, first: the names compared one by one, without
  // joining them into a key and hashing it (every compat request sends the same tools).
  const last = lastRequestTools.get(o.tools);
  if (last && perSet.get(last.key) === last.list && sameItems(last.names, names)) return last.list;
  const key = names.join('\n');
  if (perSet.has(key)) {
    const list = perSet.get(key);
    lastRequestTools.set(o.tools, { key, names, list });
    return list;
  }
  const subset: ToolSet = {};
  for (const name of names) subset[name] = o.tools[name] as ToolSet[string];
  const { tools } = await o.internal.prepareToolsAndToolChoice({
    tools: subset,
    toolChoice: undefined,
    activeTools: undefined,
  });
  const list = tools as LanguageModelV3FunctionTool[] | undefined;
  perSet.set(key, list);
  lastRequestTools.set(o.tools, { key, names, list });
  if (perSet.size > MAX_REQUEST_TOOL_LISTS) perSet.delete(perSet.keys().next().value as string);
  return list;
}

/** The last active Set (none: every tool) and filter (none: all in full) per tool set, and its list. */
const listsBySet = new WeakMap<
  ToolSet,
  {
    active: ReadonlySet<string> | undefined;
    send: StepRequestSource['sendsTool'];
    list: LanguageModelV3FunctionTool[] | undefined;
  }
>();
/** The last list per run's called tools (a run that has called some), and what it was for. */
const listsByCalls = new WeakMap<
  ReadonlySet<string>,
  {
    size: number;
    tools: ToolSet;
    active: ReadonlySet<string> | undefined;
    send: StepRequestSource['sendsTool'];
    list: LanguageModelV3FunctionTool[] | undefined;
  }
>();
const MAX_REQUEST_TOOL_LISTS = 16;
/** The list `requestTools` returned last per tool set, and the names it was for. */
const lastRequestTools = new WeakMap<
  ToolSet,
  { key: string; names: string[]; list: LanguageModelV3FunctionTool[] | undefined }
>();
