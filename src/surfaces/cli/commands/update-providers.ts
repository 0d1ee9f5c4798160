/**
 * `svc update-providers [<url-or-file>|embedded]`: refresh the provider catalog metadata into the
 * cache in the user cache dir. The source is validated (at most 4 MiB) before anything is
 * replaced; a bad file or an unreachable URL leaves the cache as it was and says why. The previous
 * cache is kept as `providers.json.bak`; `embedded` moves the cache there. Catalog metadata only:
 * config and credentials are never touched (AUTH-55), and a catalog cannot redirect a built-in
 * provider or give a provider it adds a credential (src/providers/catalog-guard.ts); what it
 * changed and what was refused is printed per provider.
 * @module
 */
import { SvcError } from '../../../errors';
import type { ProviderChange } from '../../../providers/catalog-guard';
import { printable } from '../../../util/terminal-text';
import type { CliRegistrar } from '../context';

export const registerUpdateProvidersCommand: CliRegistrar = (program, ctx) => {
  program
    .command('update-providers')
    .description(
      'refresh the provider catalog metadata from a URL or file into the user cache (embedded resets it)',
    )
    .argument(
      '[source]',
      'http(s) URL, file path, or "embedded" (default: options.catalog_url from your own config)',
    )
    .option('--json', 'print the result as JSON')
    .action(async (source: string | undefined, opts: { json?: boolean }) => {
      const app = await ctx.app();
      let from = source;
      if (!from && app.config.options.catalog_url) {
        const where = app.loaded.provenance.get('options.catalog_url');
        // A cloned repository's svc.toml must not choose where the catalog comes from.
        if (where?.kind === 'workspace')
          ctx.io.stderr.write(
            `warning: options.catalog_url in ${where.path ?? 'the workspace svc.toml'} is ignored (a workspace file cannot choose the provider catalog); set it in your own config (~/.config/svc/svc.toml) or give the source\n`,
          );
        else from = app.config.options.catalog_url;
      }
      if (!from) {
        throw new SvcError(
          'invalid_input',
          'source: give a catalog URL or file (svc update-providers <url-or-file>), "embedded" to reset, or set options.catalog_url in your own config',
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
              : `catalog ${printable(result.version, 80)} from ${printable(result.source)}: ${result.providers} providers, ${result.models} models → ${result.path}`,
            ...(result.backup ? [`previous cache kept as ${result.backup}`] : []),
            ...result.changes.flatMap(describe),
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

function describe(change: ProviderChange): string[] {
  const list = (label: string, ids: string[]) =>
    ids.length
      ? `${label} ${ids
          .slice(0, 6)
          .map((id) => printable(id, 80))
          .join(', ')}${ids.length > 6 ? ` (+${ids.length - 6})` : ''}`
      : undefined;
  const models = [
    list('models added:', change.models_added),
    list('updated:', change.models_updated),
    list('removed:', change.models_removed),
  ].filter(Boolean);
  const head =
    change.status === 'refused'
      ? `${change.id}: refused`
      : `${change.id}: ${change.status === 'added' ? 'new provider' : change.status}${models.length ? ` (${models.join('; ')})` : ''}`;
  return [head, ...change.refused.map((r) => `  refused ${printable(r.field, 40)}: ${r.reason}`)];
}
