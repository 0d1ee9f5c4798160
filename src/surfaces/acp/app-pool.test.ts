import { describe, expect, it } from 'vitest';
import type { App } from '../../app';
import { nullLogger } from '../../log';
import { createAppPool } from './app-pool';

function fakeApp(key: string, closed: string[]): App {
  return {
    workspace: key,
    close: async () => {
      closed.push(key);
    },
  } as unknown as App;
}

function pool(max: number, busy: Set<string> = new Set()) {
  const closed: string[] = [];
  const evicted: string[] = [];
  const opened: string[] = [];
  const apps = createAppPool({
    launch: { key: '/launch', app: fakeApp('/launch', closed) },
    open: async (key) => {
      opened.push(key);
      return fakeApp(key, closed);
    },
    busy: (key) => busy.has(key),
    onEvict: (key) => evicted.push(key),
    max,
    log: nullLogger,
  });
  return { apps, closed, evicted, opened };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('the ACP workspace App pool', () => {
  it('keeps at most max Apps open, closing the least recently used (never the launch one)', async () => {
    const { apps, closed, evicted, opened } = pool(3);
    await apps.acquire('/a');
    await apps.acquire('/b');
    await apps.acquire('/a'); // /a is now more recent than /b
    expect(await apps.acquire('/launch')).toMatchObject({ workspace: '/launch' });
    await apps.acquire('/c');
    await settle();
    expect(evicted).toEqual(['/b']);
    expect(closed).toEqual(['/b']);
    expect(apps.keys()).toEqual(['/a', '/launch', '/c']);
    // Reopened on its next use, closing the next least recently used one.
    expect(await apps.acquire('/b')).toMatchObject({ workspace: '/b' });
    await settle();
    expect(closed).toEqual(['/b', '/a']);
    expect(opened).toEqual(['/a', '/b', '/c', '/b']);
  });

  it('never closes an App running a prompt; over the cap while all are busy', async () => {
    const busy = new Set(['/a', '/b']);
    const { apps, closed } = pool(2, busy);
    await apps.acquire('/a');
    await apps.acquire('/b');
    await settle();
    expect(closed).toEqual([]);
    expect(apps.keys()).toEqual(['/launch', '/a', '/b']);
    busy.delete('/a');
    await apps.acquire('/c');
    await settle();
    expect(closed).toEqual(['/a']);
    // /b still runs a prompt: closed later, when an open finds it idle.
    expect(apps.keys()).toEqual(['/launch', '/b', '/c']);
  });

  it('close() closes every App but the launch one', async () => {
    const { apps, closed } = pool(8);
    await apps.acquire('/a');
    await apps.acquire('/b');
    await apps.close();
    expect(closed.sort()).toEqual(['/a', '/b']);
  });
});
