/**
 * Hash routes, so the page needs no server-side fallback and works under any path prefix:
 * `#/` sessions, `#/s/<id>` a session (`/runs`, `/checkpoints`, `/readouts/<name>` its tabs),
 * `#/readouts/<name>` the readouts without a session.
 * @module
 */
import { useEffect, useState } from 'preact/hooks';

export const READOUTS = ['dashboard', 'operating-mode', 'adaptive', 'cognition'] as const;
export type ReadoutName = (typeof READOUTS)[number];
export const SESSION_TABS = ['chat', 'runs', 'checkpoints', 'readouts'] as const;
export type SessionTab = (typeof SESSION_TABS)[number];

export type Route =
  | { name: 'sessions' }
  | { name: 'session'; id: string; tab: SessionTab; readout?: ReadoutName; runId?: string }
  | { name: 'readouts'; readout: ReadoutName }
  | { name: 'unknown'; path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/\?.*$/, '') || '/';
  const parts = path.split('/').filter(Boolean).map(safeDecode);
  if (parts.length === 0) return { name: 'sessions' };
  if (parts[0] === 's' && parts[1]) {
    const tab = (parts[2] ?? 'chat') as SessionTab;
    if (!SESSION_TABS.includes(tab)) return { name: 'unknown', path };
    if (tab === 'readouts') {
      const readout = (parts[3] ?? 'dashboard') as ReadoutName;
      if (!READOUTS.includes(readout)) return { name: 'unknown', path };
      return { name: 'session', id: parts[1], tab, readout };
    }
    if (tab === 'runs' && parts[3]) return { name: 'session', id: parts[1], tab, runId: parts[3] };
    return { name: 'session', id: parts[1], tab };
  }
  if (parts[0] === 'readouts') {
    const readout = (parts[1] ?? 'dashboard') as ReadoutName;
    if (READOUTS.includes(readout)) return { name: 'readouts', readout };
  }
  return { name: 'unknown', path };
}

export function href(route: Route): string {
  switch (route.name) {
    case 'sessions':
      return '#/';
    case 'session': {
      const base = `#/s/${encodeURIComponent(route.id)}`;
      if (route.tab === 'chat') return base;
      if (route.tab === 'readouts') return `${base}/readouts/${route.readout ?? 'dashboard'}`;
      if (route.tab === 'runs' && route.runId) return `${base}/runs/${encodeURIComponent(route.runId)}`;
      return `${base}/${route.tab}`;
    }
    case 'readouts':
      return `#/readouts/${route.readout}`;
    case 'unknown':
      return `#${route.path}`;
    default: {
      const never: never = route;
      return never;
    }
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
