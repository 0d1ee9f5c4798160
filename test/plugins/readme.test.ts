/** The plugin manifest and the config examples of the remote-agent and contract docs parse (docs that do not parse are a defect). */
import { readFileSync } from 'node:fs';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema';
import { manifestSchema } from '../../src/plugins/manifest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The body of the first ```toml block that contains `marker`. */
function tomlBlock(text: string, marker: string): string {
  const block = text
    .split('```toml\n')
    .slice(1)
    .find((part) => part.split('```')[0].includes(marker));
  expect(block, marker).toBeDefined();
  return (block as string).split('```')[0];
}

describe('docs examples', () => {
  it('the plugin manifest example is a valid svc-plugin.toml', () => {
    const manifest = manifestSchema().parse(parse(tomlBlock(read('docs/plugins.md'), '# svc-plugin.toml')));
    expect(manifest).toMatchObject({
      name: 'review-kit',
      version: '1.2.0',
      packs: 'packs',
      commands: 'commands',
    });
    expect(Object.keys(manifest.mcp)).toEqual(['reviewer']);
  });

  it('the [a2a], [contracts] and [deploy] examples are valid config', () => {
    const a2a = configSchema().parse(parse(tomlBlock(read('docs/remote-agents.md'), '[a2a]')));
    expect(a2a.a2a).toMatchObject({
      enabled: true,
      name: 'svc-reviewer',
      remotes: { builder: { url: 'http://10.0.0.5:7420' } },
    });
    const contracts = configSchema().parse(parse(tomlBlock(read('docs/contracts.md'), '[contracts.tests]')));
    expect(Object.keys(contracts.contracts)).toEqual(['tests', 'changelog', 'no-todos', 'plan']);
    const deploy = configSchema().parse(
      parse(tomlBlock(read('docs/remote-agents.md'), '[deploy.targets.box]')),
    );
    expect(deploy.deploy).toMatchObject({ enabled: true, targets: { box: { host: 'build-box.internal' } } });
  });
});
