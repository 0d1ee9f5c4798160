/**
 * `svc update-providers [<url-or-file>|embedded]`: refresh the provider catalog metadata into the
 * cache in the data dir. The source is validated before anything is replaced; a bad file or an
 * unreachable URL leaves the cache as it was and says why. `embedded` removes the cache. Catalog
 * metadata only: config and credentials are never touched (AUTH-55).
 * @module
 */
import { SvcError } from '../../../errors';
import type { CliRegistrar } from '../context';

export const registerUpdateProvidersCommand: CliRegistrar = (program, ctx) => {
  program
    .command('update-providers')
    .description(
      'refresh the provider catalog from a URL or file into the data-dir cache (embedded resets it)',
    )
    .argument('[source]', 'http(s) URL, file path, or "embedded" (default: options.catalog_url)')
    .option('--json', 'print the result as JSON')
    .action(async (source: string | undefined, opts: { json?: boolean }) => {
      const app = await ctx.app();
      const from = source ?? app.config.options.catalog_url;
      if (!from) {
        throw new SvcError(
          'invalid_input',
          'source: give a catalog URL or file (svc update-providers <url-or-file>), "embedded" to reset, or set options.catalog_url',
        );
      }
      const result = await app.providers.refreshCatalog(from, ctx.io.signal);
      if (opts.json) {
        ctx.json(app.redactor.value(result));
        return;
      }
      ctx.out(
        app.redactor.string(
          [
            from === 'embedded'
              ? `catalog cache removed: the embedded catalog ${result.version} is used (${result.providers} providers, ${result.models} models)`
              : `catalog ${result.version} from ${result.source}: ${result.providers} providers, ${result.models} models → ${result.path}`,
            ...(result.added.length ? [`new providers: ${result.added.join(', ')}`] : []),
            ...(result.updated.length ? [`updated providers: ${result.updated.join(', ')}`] : []),
            ...(result.ignored
              ? [
                  'note: options.disable_provider_auto_update = true, so only the embedded catalog is used until it is turned off',
                ]
              : []),
          ].join('\n'),
        ),
      );
    });
};
