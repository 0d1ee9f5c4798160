/**
 * `svc auth bedrock | vertex | azure`: cloud identity checks (which credential source each
 * provider of the family would use, and what is missing), and `bedrock token` to store a bearer
 * token.
 * @module
 */
import type { Command } from 'commander';
import { SvcError } from '../../../errors';
import type { CliContext } from '../context';
import { print, storeToken, tokenText } from './auth-credentials';

export function registerCloudIdentityCommands(auth: Command, ctx: CliContext): void {
  auth
    .command('bedrock')
    .description(
      'Amazon Bedrock identity: `bedrock [provider]` checks, `bedrock doctor` inspects every source, `bedrock token <provider> --token-stdin` stores a bearer token',
    )
    .argument('[args...]', 'doctor [provider] | token <provider> | <provider>')
    .option('--token-stdin', 'read the bearer token from standard input (with token)')
    .option('--json', 'print the result as JSON')
    .action(async (args: string[], opts: { tokenStdin?: boolean; json?: boolean }) => {
      const app = await ctx.app();
      const { bedrockDoctor } = await import('../../../providers/reports');
      const [first, second] = args;
      if (first === 'token') {
        if (!second)
          throw new SvcError(
            'invalid_input',
            'provider: required: svc auth bedrock token <provider> --token-stdin',
          );
        if (!opts.tokenStdin)
          throw new SvcError(
            'invalid_input',
            '--token-stdin: required (the token is read from standard input, never from the command line)',
          );
        const result = await storeToken(
          app,
          ctx,
          second,
          'bearer',
          'svc auth bedrock token',
          'amazon-bedrock',
        );
        print(ctx, app, opts.json, result, () => tokenText(result));
        return;
      }
      const doctor = first === 'doctor';
      const reports = bedrockDoctor(app.providers, doctor ? second : first);
      const configured = reports.filter((r) => app.providers.entry(r.provider)?.configured || r.ready);
      const shown = doctor ? reports : configured.length ? configured : reports;
      print(ctx, app, opts.json, doctor ? { doctor: true, providers: reports } : { providers: shown }, () =>
        shown.map((r) => bedrockText(r, doctor)).join('\n\n'),
      );
      if (!doctor && !shown.some((r) => r.ready)) ctx.exitCode = 1;
    });

  for (const platform of ['vertex', 'azure'] as const) {
    auth
      .command(platform)
      .description(
        `${platform === 'vertex' ? 'Google Vertex AI' : 'Azure OpenAI'} identity check (\`${platform} doctor\` shows every provider of the family)`,
      )
      .argument('[args...]', 'doctor [provider] | <provider>')
      .option('--json', 'print the result as JSON')
      .action(async (args: string[], opts: { json?: boolean }) => {
        const app = await ctx.app();
        const { cloudIdentity } = await import('../../../providers/reports');
        const doctor = args[0] === 'doctor';
        const wanted = doctor ? args[1] : args[0];
        const all = cloudIdentity(app.providers)[platform].filter(
          (r): r is NonNullable<typeof r> => r !== null && (!wanted || r.provider === wanted),
        );
        if (wanted && all.length === 0)
          throw new SvcError('not_found', `provider: "${wanted}" is not a ${platform} provider`);
        print(ctx, app, opts.json, { doctor, providers: all }, () =>
          all
            .map((r) =>
              [
                `${r.provider}: ${r.ready ? 'ready' : 'not ready'}`,
                ...Object.entries(r)
                  .filter(([k]) => !['provider', 'ready', 'problems'].includes(k))
                  .map(([k, v]) => `  ${k}: ${v ?? '-'}`),
                ...r.problems.map((p) => `  missing: ${p}`),
              ].join('\n'),
            )
            .join('\n\n'),
        );
        if (!doctor && !all.some((r) => r.ready)) ctx.exitCode = 1;
      });
  }
}

function bedrockText(
  r: import('../../../providers/cloud/bedrock').BedrockInspection,
  doctor: boolean,
): string {
  const lines = [
    `${r.provider}: ${r.ready ? 'ready' : 'not ready'}`,
    `  auth_source: ${r.auth_source}${r.auth_source_configured ? '' : ' (unset: auto)'}`,
    `  credential source: ${r.source ? `${r.source} (${r.source_detail})` : 'none'}`,
    `  region: ${r.region ?? 'missing'}${r.region_source ? ` (${r.region_source})` : ''}`,
    `  profile: ${r.profile ?? '-'}${r.profile_source ? ` (${r.profile_source})` : ''}`,
  ];
  if (doctor) {
    lines.push('  sources (auto order):');
    for (const s of r.sources)
      lines.push(
        `    ${s.present ? 'present' : 'absent '} ${`${s.source}:`.padEnd(15)} ${s.detail}${s.note ? ` (${s.note})` : ''}`,
      );
  }
  for (const p of r.problems) lines.push(`  missing: ${p}`);
  return lines.join('\n');
}
