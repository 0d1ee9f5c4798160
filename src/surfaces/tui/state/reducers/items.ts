/**
 * Small pure helpers the transcript reducers share: an assistant item for a message, a notice for
 * an event, replacing an item, finding the last matching one.
 * @module
 */
import type { FailureReport } from '../../../../errors';
import type { SessionEvent } from '../../../../events/bus';
import type { NoticeItem, TranscriptState } from '../transcript-types';

export function ensureAssistant(state: TranscriptState, messageId: string): TranscriptState {
  if (state.items.some((i) => i.kind === 'assistant' && i.message_id === messageId)) return state;
  return {
    ...state,
    items: [
      ...state.items,
      {
        kind: 'assistant',
        key: `a:${messageId}`,
        message_id: messageId,
        text: '',
        reasoning: '',
        done: false,
      },
    ],
  };
}

export function notice(event: SessionEvent, level: NoticeItem['level'], text: string): NoticeItem {
  return { kind: 'notice', key: `n:${event.id}:${event.type}`, level, text };
}

export function failureNotice(
  event: SessionEvent,
  level: NoticeItem['level'],
  failure: FailureReport,
): NoticeItem {
  return { ...notice(event, level, failure.summary), failure };
}

export function replaceAt<T>(list: T[], index: number, value: T): T[] {
  const copy = list.slice();
  copy[index] = value;
  return copy;
}

export function lastIndex<T>(list: T[], predicate: (item: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (predicate(list[i])) return i;
  return -1;
}
