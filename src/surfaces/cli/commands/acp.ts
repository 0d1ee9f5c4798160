/**
 * `svc acp`: serve svc as an Agent Client Protocol agent on stdio (editors such as Zed launch it
 * this way). stdout carries protocol frames only; logs go to the log file. It runs until the
 * client closes stdin (or SIGTERM/SIGINT). The SDK loads only here.
 * @module
 */
import { homedir } from 'node:os';
import type { CliRegistrar } from '../context';

export const registerAcp: CliRegistrar = (program, ctx) => {
  program
    .command('acp')
    .description('serve svc over the Agent Client Protocol on stdio (for editors such as Zed)')
    .action(async () => {
      const app = await ctx.app({ eagerDb: true });
      const [{ serveAcp }, { createApp }] = await Promise.all([
        import('../../acp/server'),
        import('../../../app'),
      ]);
      ctx.keepAlive = true;
      app.runtime.ready = true;
      const log = app.log.child({ component: 'acp' });
      const globals = ctx.globals();
      // One App per workspace: the launch one, plus one for each other cwd a session names (the
      // server keeps at most 8 open and closes them when the connection ends).
      const openApp = (workspace: string) =>
        createApp({
          workspace,
          configFile: globals.config,
          overrides: globals.c ?? [],
          env: ctx.io.env,
          eagerDb: true,
        });
      const stdin = (ctx.io.stdin ?? process.stdin) as NodeJS.ReadableStream;
      const stopping = new AbortController();
      const stop = () => stopping.abort();
      process.once('SIGTERM', stop);
      ctx.io.signal?.addEventListener('abort', stop, { once: true });
      log.info('acp server started', { workspace: app.workspace });
      try {
        await serveAcp({
          app,
          openApp,
          log,
          home: ctx.io.env.HOME ?? homedir(),
          input: stdin,
          output: ctx.io.stdout as unknown as NodeJS.WritableStream,
          signal: stopping.signal,
        });
      } finally {
        process.off('SIGTERM', stop);
        log.info('acp server stopped');
        await app.close();
      }
    });
};
