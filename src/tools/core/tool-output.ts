/**
 * How a tool returns more than JSON to the model: attachments. A tool whose result carries
 * `attachments: ToolAttachment[]` (base64 data + media type) asks the agent loop to send those
 * parts to the model with the tool result (`toModelContent` builds the AI SDK tool-result
 * `content` output: the tool's text first, then one `image-data` / `file-data` part each).
 * Surfaces that print JSON keep the field; `withoutAttachmentData` drops the bytes for logs,
 * ledgers and UIs.
 * @module
 */

export interface ToolAttachment {
  type: 'image' | 'file';
  /** IANA media type: image/png, image/jpeg, application/pdf… */
  media_type: string;
  /** Base64 content. */
  data: string;
  /** Workspace-relative path it came from, when it is a file. */
  path?: string;
}

/** The AI SDK (LanguageModelV3) tool-result output for content with media parts. */
export interface ToolContentOutput {
  type: 'content';
  value: (
    | { type: 'text'; text: string }
    | { type: 'image-data'; data: string; mediaType: string }
    | { type: 'file-data'; data: string; mediaType: string; filename?: string }
  )[];
}

export function attachmentsOf(result: unknown): ToolAttachment[] {
  if (!result || typeof result !== 'object') return [];
  const list = (result as { attachments?: unknown }).attachments;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (a): a is ToolAttachment =>
      !!a && typeof a === 'object' && typeof a.data === 'string' && typeof a.media_type === 'string',
  );
}

/** Tool-result content for the model: the text, then the attachments; undefined when there are none. */
export function toModelContent(result: unknown, text: string): ToolContentOutput | undefined {
  const attachments = attachmentsOf(result);
  if (attachments.length === 0) return undefined;
  return {
    type: 'content',
    value: [
      { type: 'text', text },
      ...attachments.map((a) =>
        a.type === 'image'
          ? { type: 'image-data' as const, data: a.data, mediaType: a.media_type }
          : {
              type: 'file-data' as const,
              data: a.data,
              mediaType: a.media_type,
              ...(a.path ? { filename: a.path.split('/').pop() } : {}),
            },
      ),
    ],
  };
}

/** The result with attachment bytes replaced by their size (for ledgers, logs, UIs). */
export function withoutAttachmentData<T>(result: T): T {
  const attachments = attachmentsOf(result);
  if (attachments.length === 0) return result;
  return {
    ...(result as object),
    attachments: attachments.map(({ data, ...rest }) => ({
      ...rest,
      bytes: Math.floor((data.length * 3) / 4),
    })),
  } as T;
}
