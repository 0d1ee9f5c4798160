/**
 * `/why`: the latest failure in full (../../why.ts loads it), wrapped to the frame.
 * @module
 */
import type { TuiClient } from '../../client';
import { loadWhy, type SeenFailure } from '../../why';
import { ReadoutView } from './readout-view';

export function WhyView(props: {
  client: Pick<TuiClient, 'callTool'>;
  seen: SeenFailure | undefined;
  sessionId: string | undefined;
  height: number;
  onClose(): void;
}) {
  return (
    <ReadoutView
      height={props.height}
      title="/why · the latest failure"
      wrap
      load={(signal) => loadWhy(props.client, props.seen, props.sessionId, signal)}
      onClose={props.onClose}
    />
  );
}
