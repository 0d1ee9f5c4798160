/**
 * The type of a transcript reducer: one function per event type of a family, each taking the state
 * (already a copy with `lastEventId` advanced), the event's typed payload and the event.
 * @module
 */
import type { SessionEvent } from '../../../../events/bus';
import type { SessionEventPayloads, SessionEventType } from '../../../../events/types';
import type { TranscriptState } from '../transcript-types';

export type EventHandlers = {
  [T in SessionEventType]?: (
    next: TranscriptState,
    payload: SessionEventPayloads[T],
    event: SessionEvent,
  ) => TranscriptState;
};
