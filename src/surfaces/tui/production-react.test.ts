import { describe, expect, it } from 'vitest';
import { dropUnusedDevelopmentBuilds, withProductionReact } from './production-react';

describe('withProductionReact', () => {
  it('loads with NODE_ENV=production and removes it afterwards when the user had none', async () => {
    const env: NodeJS.ProcessEnv = { PATH: '/bin' };
    const seen = await withProductionReact(async () => env.NODE_ENV, env);
    expect(seen).toBe('production');
    expect(env).toEqual({ PATH: '/bin' });
    expect('NODE_ENV' in env).toBe(false);
  });

  it("puts the user's own NODE_ENV back", async () => {
    const env: NodeJS.ProcessEnv = { NODE_ENV: 'development' };
    await expect(withProductionReact(async () => env.NODE_ENV, env)).resolves.toBe('production');
    expect(env.NODE_ENV).toBe('development');
  });

  it('restores it when loading fails', async () => {
    const env: NodeJS.ProcessEnv = {};
    await expect(
      withProductionReact(async () => {
        throw new Error('no module');
      }, env),
    ).rejects.toThrow('no module');
    expect('NODE_ENV' in env).toBe(false);
  });

  it('leaves no string "undefined" in process.env', async () => {
    const had = process.env.NODE_ENV;
    try {
      delete process.env.NODE_ENV;
      await withProductionReact(async () => undefined);
      expect(process.env.NODE_ENV).toBeUndefined();
    } finally {
      if (had !== undefined) process.env.NODE_ENV = had;
    }
  });
});

describe('dropUnusedDevelopmentBuilds', () => {
  it("drops React's development files that never ran, and nothing else", () => {
    const entry = (loaded: boolean) => ({ loaded }) as NodeJS.Module;
    const cache: NodeJS.Dict<NodeJS.Module> = {
      '/n/node_modules/react/cjs/react.development.js': entry(false),
      '/n/node_modules/react-reconciler/cjs/react-reconciler.development.js': entry(false),
      '/n/node_modules/scheduler/cjs/scheduler.development.js': entry(true),
      '/n/node_modules/react/cjs/react.production.js': entry(true),
      '/n/node_modules/other/cjs/other.development.js': entry(false),
    };
    dropUnusedDevelopmentBuilds(cache);
    expect(Object.keys(cache)).toEqual([
      '/n/node_modules/scheduler/cjs/scheduler.development.js',
      '/n/node_modules/react/cjs/react.production.js',
      '/n/node_modules/other/cjs/other.development.js',
    ]);
  });
});
