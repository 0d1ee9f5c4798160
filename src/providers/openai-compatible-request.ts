/**
 * The OpenAI-compatible chat model's streamed request (URL, headers, body) built by svc for the
 * calls svc makes, instead of the SDK's `getArgs` + `transformRequestBody` + `combineHeaders` +
 * `postJsonToApi`. Those cost a request four awaited provider-option parses (each a microtask hop
 * before the request can leave), a camel-casing regex per option key, a `Headers` object to add
 * the user agent, and object spreads for every message, all for values that are the same on every
 * call of a model (the headers, the URL) or that svc never sets (provider options for this SDK,
 * a response format, `topK`, a body transform).
 *
 * The body is the object the SDK builds, key for key in its order, and the headers are the SDK's
 * own functions' result computed once per model (`withUserAgentSuffix` over the config's headers
 * and `Content-Type`), so the bytes sent are the same. A call using anything not covered here (a
 * provider option the SDK reads, a response format, `topK`, call headers, a provider tool, a file
 * part, an unknown part or tool output type) answers undefined and takes the SDK's path. A test
 * compares svc's bytes and headers with the SDK's for a matrix of calls, so an SDK upgrade that
 * changes them fails loudly.
 * @module
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3ToolChoice,
} from '@ai-sdk/provider';
import {
  combineHeaders,
  getRuntimeEnvironmentUserAgent,
  secureJsonParse,
  stringifyWithBigIntAndCycles,
  VERSION,
  withUserAgentSuffix,
} from '@ai-sdk/provider-utils';

type Obj = Record<string, unknown>;

/** What the builder reads of the SDK's chat model (private in its types). */
export interface ChatRequestModel {
  modelId: string;
  providerOptionsName: string;
  config: Obj & {
    url(options: { path: string; modelId: string }): string;
    headers(): Record<string, string | undefined>;
    includeUsage?: boolean;
  };
}

/** A request as the SDK's `doStream` would send it. */
export interface ChatRequest {
  url: string;
  /** The fetch headers: `postToApi`'s, a fresh object each call. */
  headers: Record<string, string>;
  /** The body's values (the SDK's `requestBodyValues` and the result's `request.body`). */
  body: Obj;
  /** The SDK's `metadataKey`: where provider metadata goes in the parts. */
  metadataKey: string;
}

/**
 * The model's request builder: answers the request for a call it covers, undefined for one the
 * SDK must build. `fixedConfig`: the config's URL and headers are the same on every call (./
 * openai-compatible-lean.ts `onceComputedRequest`), so they are computed once.
 */
export function chatRequestBuilder(
  model: ChatRequestModel,
  fixedConfig: boolean,
): (options: LanguageModelV3CallOptions) => ChatRequest | undefined {
  const { config } = model;
  const name = model.providerOptionsName;
  // The provider option keys the SDK's getArgs reads: a call with any of them takes its path.
  const optionKeys = [...new Set(['openai-compatible', 'openaiCompatible', name, toCamelCase(name)])];
  let fixed: { url: string; headers: Record<string, string> } | undefined;
  const target = () => {
    if (fixed) return fixed;
    const url = config.url({ path: '/chat/completions', modelId: model.modelId });
    // postJsonToApi's and postToApi's headers, by their own functions.
    const headers = withUserAgentSuffix(
      { 'Content-Type': 'application/json', ...combineHeaders(config.headers(), undefined) },
      `ai-sdk/provider-utils/${VERSION}`,
      getRuntimeEnvironmentUserAgent(),
    );
    const computed = { url, headers };
    if (fixedConfig) fixed = computed;
    return computed;
  };
  return (options) => {
    if (config.transformRequestBody != null || !coveredOptions(options, optionKeys)) return undefined;
    const tools = toolsOf(options.tools, options.toolChoice);
    if (tools === false) return undefined;
    const messages = chatMessages(options.prompt);
    if (!messages) return undefined;
    const { url, headers } = target();
    const body: Obj = {
      model: model.modelId,
      user: undefined,
      max_tokens: options.maxOutputTokens,
      temperature: options.temperature,
      top_p: options.topP,
      frequency_penalty: options.frequencyPenalty,
      presence_penalty: options.presencePenalty,
      response_format: undefined,
      stop: options.stopSequences,
      seed: options.seed,
      verbosity: undefined,
      messages,
      tools: tools.tools,
      tool_choice: tools.toolChoice,
      stream: true,
      stream_options: config.includeUsage ? { include_usage: true } : undefined,
    };
    return { url, headers: { ...headers }, body, metadataKey: name };
  };
}

/** No option of the call changes the SDK's body beyond what chatRequestBuilder writes. */
function coveredOptions(options: LanguageModelV3CallOptions, optionKeys: string[]): boolean {
  if (options.topK != null) return false;
  if (options.responseFormat != null && options.responseFormat.type !== 'text') return false;
  if (options.headers != null && Object.keys(options.headers).length > 0) return false;
  const providerOptions = options.providerOptions;
  if (providerOptions != null) for (const key of optionKeys) if (providerOptions[key] != null) return false;
  return true;
}

/** The SDK's `prepareTools` for function tools; false for a call it would warn or throw on. */
function toolsOf(
  tools: LanguageModelV3CallOptions['tools'],
  toolChoice: LanguageModelV3ToolChoice | undefined,
): { tools?: Obj[]; toolChoice?: unknown } | false {
  if (!tools?.length) return {};
  let out = wireTools.get(tools);
  if (out === undefined) {
    out = wireList(tools);
    wireTools.set(tools, out);
  }
  if (out === false) return false;
  if (toolChoice == null) return { tools: out, toolChoice: undefined };
  switch (toolChoice.type) {
    case 'auto':
    case 'none':
    case 'required':
      return { tools: out, toolChoice: toolChoice.type };
    case 'tool':
      return { tools: out, toolChoice: { type: 'function', function: { name: toolChoice.toolName } } };
    default:
      return false;
  }
}

/**
 * The wire tools of a tool list, by the list: the step driver hands the same list for the same
 * tools (../agent/step-request.ts, and ./request-body.ts marks it once), and a list is not changed
 * once handed to a model. false: a list with a tool the SDK's path must take.
 */
const wireTools = new WeakMap<object, Obj[] | false>();

function wireList(tools: NonNullable<LanguageModelV3CallOptions['tools']>): Obj[] | false {
  const out: Obj[] = [];
  for (const tool of tools) {
    if (tool.type !== 'function') return false;
    out.push(functionTool(tool));
  }
  return out;
}

function functionTool(tool: LanguageModelV3FunctionTool): Obj {
  return {
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.inputSchema,
      ...(tool.strict != null ? { strict: tool.strict } : {}),
    },
  };
}

/**
 * The SDK's `convertToOpenAICompatibleChatMessages` for text, reasoning, tool calls and tool
 * results; undefined when the prompt has a part it converts otherwise (files) or not at all.
 * Also what ./prompt-messages.ts converts each new prompt message with.
 */
export function chatMessages(prompt: LanguageModelV3Message[]): Obj[] | undefined {
  const messages: Obj[] = [];
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        messages.push({ role: 'system', content: message.content, ...metadataOf(message) });
        break;
      case 'user': {
        const { content } = message;
        if (content.length === 1 && content[0].type === 'text') {
          messages.push({ role: 'user', content: content[0].text, ...metadataOf(content[0]) });
          break;
        }
        const parts: Obj[] = [];
        for (const part of content) {
          if (part.type !== 'text') return undefined;
          parts.push({ type: 'text', text: part.text, ...metadataOf(part) });
        }
        messages.push({ role: 'user', content: parts, ...metadataOf(message) });
        break;
      }
      case 'assistant': {
        const assistant = assistantMessage(message);
        if (!assistant) return undefined;
        messages.push(assistant);
        break;
      }
      case 'tool':
        for (const result of message.content) {
          if (result.type === 'tool-approval-response') continue;
          if (result.type !== 'tool-result') return undefined;
          const content = toolOutput(result.output);
          if (content === false) return undefined;
          messages.push({ role: 'tool', tool_call_id: result.toolCallId, content, ...metadataOf(result) });
        }
        break;
      default:
        return undefined;
    }
  }
  return messages;
}

function assistantMessage(message: Extract<LanguageModelV3Message, { role: 'assistant' }>): Obj | undefined {
  let text = '';
  let reasoning = '';
  const toolCalls: Obj[] = [];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        text += part.text;
        break;
      case 'reasoning':
        reasoning += part.text;
        break;
      case 'tool-call': {
        const thoughtSignature = part.providerOptions?.google?.thoughtSignature;
        toolCalls.push({
          id: part.toolCallId,
          type: 'function',
          function: { name: part.toolName, arguments: toolCallArguments(part.input) },
          ...metadataOf(part),
          ...(thoughtSignature
            ? { extra_content: { google: { thought_signature: String(thoughtSignature) } } }
            : {}),
        });
        break;
      }
      // The SDK drops an assistant's file and tool-result parts from this message; so does svc.
      case 'file':
      case 'tool-result':
        break;
      default:
        return undefined;
    }
  }
  return {
    role: 'assistant',
    content: toolCalls.length > 0 ? text || null : text,
    ...(reasoning.length > 0 ? { reasoning_content: reasoning } : {}),
    tool_calls: toolCalls.length > 0 ? toolCalls : undefined,
    ...metadataOf(message),
  };
}

type ToolOutput = Extract<
  Extract<LanguageModelV3Message, { role: 'tool' }>['content'][number],
  { type: 'tool-result' }
>['output'];

/** A tool result's content as the SDK writes it; false for an output type it does not know. */
function toolOutput(output: ToolOutput): unknown {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'execution-denied':
      return output.reason ?? 'Tool call execution denied.';
    case 'content':
    case 'json':
    case 'error-json':
      return stringifyWithBigIntAndCycles(output.value);
    default:
      return false;
  }
}

/** The SDK's `serializeToolCallArguments`. */
function toolCallArguments(input: unknown): string {
  if (typeof input === 'string') {
    try {
      secureJsonParse(input);
      return input;
    } catch {
      return JSON.stringify(input);
    }
  }
  return stringifyWithBigIntAndCycles(input);
}

/** The SDK's `getOpenAIMetadata`: a message's or part's `providerOptions.openaiCompatible`. */
function metadataOf(item: { providerOptions?: Record<string, unknown> }): Obj | undefined {
  return item.providerOptions?.openaiCompatible as Obj | undefined;
}

/** The SDK's `toCamelCase` (provider option keys). */
function toCamelCase(text: string): string {
  return text.replace(/[_-]([a-z])/g, (match) => match[1].toUpperCase());
}
