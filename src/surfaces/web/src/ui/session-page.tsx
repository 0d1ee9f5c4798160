/**
 * One session: its header (state, model, connection), and the tabs — the chat (transcript,
 * permission requests, prompt box), its runs ledger, the checkpoints, and the readouts scoped to
 * it. The controller (stream and transcript) lives as long as the page, across tabs.
 * @module
 */
import type { JSX } from 'preact';
import { useEffect, useMemo } from 'preact/hooks';
import type { Api } from '../api';
import type { StreamStatus } from '../events';
import { href, type Route, SESSION_TABS } from '../router';
import { createSessionController, type SessionController } from '../session-controller';
import { CheckpointsPanel } from './checkpoints-panel';
import { Badge, ErrorBox, Loading, outsideText } from './common';
import { useExternal } from './hooks';
import { PermissionCard } from './permission-card';
import { PromptBox } from './prompt-box';
import { ReadoutsPage } from './readouts/readouts-page';
import { RunsPanel } from './runs-panel';
import { Transcript } from './transcript';

type SessionRoute = Extract<Route, { name: 'session' }>;

const TAB_LABELS: Record<SessionRoute['tab'], string> = {
  chat: 'Chat',
  runs: 'Runs',
  checkpoints: 'Checkpoints',
  readouts: 'Readouts',
};

export function SessionPage({ api, route }: { api: Api; route: SessionRoute }): JSX.Element {
  const controller = useMemo(() => createSessionController(api, route.id), [api, route.id]);
  useEffect(() => () => controller.dispose(), [controller]);
  const state = useExternal(controller.subscribe, controller.state);

  if (state.loadError) {
    const missing = state.loadError.code === 'not_found';
    return (
      <div class="page">
        <ErrorBox
          title={missing ? 'No such session' : undefined}
          error={
            missing
              ? new Error(
                  `There is no session "${outsideText(route.id)}" on this server. It may have been deleted, or the link is from another server.`,
                )
              : state.loadError
          }
          onRetry={missing ? undefined : () => void controller.reload()}
        />
        <p>
          <a href="#/">Back to the sessions</a>
        </p>
      </div>
    );
  }
  if (!state.session) return <Loading what="the session" />;
  const session = state.session;

  return (
    <div class="page session-page">
      <div class="session-head">
        <h1>{outsideText(session.title) || <span class="muted">(untitled)</span>}</h1>
        <div class="session-badges">
          <code>{session.id}</code>
          <Badge tone={session.state === 'idle' ? undefined : 'live'}>{session.state}</Badge>
          <Badge>{outsideText(session.model) || 'default model'}</Badge>
          <ConnectionBadge status={state.stream} />
        </div>
      </div>
      <ConnectionBanner
        status={state.stream}
        onRetry={() => void controller.reload()}
        onReconnect={() => controller.reconnect()}
      />
      <nav class="tabs" aria-label="Session">
        {SESSION_TABS.map((tab) => (
          <a
            key={tab}
            href={href({ name: 'session', id: session.id, tab })}
            aria-current={route.tab === tab ? 'page' : undefined}
          >
            {TAB_LABELS[tab]}
          </a>
        ))}
      </nav>
      {route.tab === 'chat' ? <ChatTab api={api} controller={controller} /> : null}
      {route.tab === 'runs' ? <RunsPanel api={api} sessionId={session.id} runId={route.runId} /> : null}
      {route.tab === 'checkpoints' ? <CheckpointsPanel api={api} /> : null}
      {route.tab === 'readouts' ? (
        <ReadoutsPage api={api} readout={route.readout ?? 'dashboard'} sessionId={session.id} />
      ) : null}
    </div>
  );
}

function ChatTab({ api, controller }: { api: Api; controller: SessionController }) {
  const state = useExternal(controller.subscribe, controller.state);
  const store = controller.transcript();
  const transcript = useExternal(store.subscribe, store.getSnapshot);
  return (
    <div class="chat">
      <Transcript state={transcript} />
      {transcript.permissions.map((request) => (
        <PermissionCard
          key={request.request_id}
          request={request}
          onAnswer={(decision) => controller.answer(request.request_id, decision)}
        />
      ))}
      <PromptBox api={api} controller={controller} transcript={transcript} state={state} />
    </div>
  );
}

function ConnectionBadge({ status }: { status: StreamStatus }) {
  switch (status.state) {
    case 'live':
      return <Badge tone="ok">live</Badge>;
    case 'connecting':
      return <Badge>connecting…</Badge>;
    case 'reconnecting':
      return <Badge tone="warn">reconnecting</Badge>;
    case 'limited':
      return <Badge tone="bad">too many views</Badge>;
    case 'paused':
      return <Badge>paused while hidden</Badge>;
    case 'stopped':
      return <Badge tone="bad">disconnected</Badge>;
    default: {
      const never: never = status;
      return never;
    }
  }
}

function ConnectionBanner({
  status,
  onRetry,
  onReconnect,
}: {
  status: StreamStatus;
  onRetry(): void;
  onReconnect(): void;
}) {
  if (status.state === 'limited') {
    // Stays until a stream is let in: asking again at once would only be refused again.
    return (
      <div class="banner bad" role="alert">
        <strong>Live updates paused: this session has too many open views.</strong> The server allows only so
        many event streams per session (<code>[services.http] sse_max_streams_per_session</code>) and they are
        all in use. Close another tab or window showing this session, or raise{' '}
        <code>sse_max_streams_per_session</code> in svc.toml, then try again. Trying again by itself in{' '}
        {Math.ceil(status.inMs / 1000)} s.{' '}
        <button type="button" onClick={onReconnect}>
          Try again now
        </button>
        {/* The server's advice to API clients (reconnect with Last-Event-ID) is this page's own job. */}
        <div class="muted">
          Server: {status.drop.message.replace(/; reconnect with Last-Event-ID.*$/, '')}
        </div>
      </div>
    );
  }
  if (status.state === 'live' && status.resumed) {
    return (
      <div class="note muted" role="status">
        Reconnected: the server had dropped this view's stream because it fell behind ({status.resumed.reason}
        ); what it had not read was replayed, nothing is missing.
      </div>
    );
  }
  if (status.state === 'reconnecting') {
    return (
      <div class="banner warn" role="status">
        Connection lost: {status.reason} Reconnecting in {Math.ceil(status.inMs / 1000)} s (attempt{' '}
        {status.attempt}); what you missed is replayed when it is back.
      </div>
    );
  }
  if (status.state === 'stopped') {
    return (
      <div class="banner bad" role="alert">
        Live updates stopped: {status.error.message}{' '}
        <button type="button" onClick={onRetry}>
          Reconnect
        </button>
      </div>
    );
  }
  return null;
}
