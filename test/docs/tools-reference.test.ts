/**
 * docs/tools.md is generated from the tool registry; this test fails when the page differs from
 * what the registry says now. `npm run docs` (vitest -u on this folder) rewrites it.
 */
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema';
import { renderToolsReference } from '../../src/tools/core/reference';
import { allTools } from '../../src/tools/index';

const page = renderToolsReference(allTools, { defaultConfig: configSchema().parse({}) });

/** One tool's section: from its heading to the next heading. */
function section(name: string): string {
  return page.split(`\n### ${name}\n`)[1].split('\n## ')[0].split('\n### ')[0];
}

describe('tools reference (docs/tools.md)', () => {
  it('is up to date with the registry (run `npm run docs` to regenerate it)', async () => {
    await expect(page).toMatchFileSnapshot('../../docs/tools.md');
  });

  it('has a section for every tool with every surface binding', () => {
    const headings = page
      .split('\n### ')
      .slice(1)
      .map((s) => s.split('\n')[0]);
    expect(headings.sort()).toEqual(allTools.map((t) => t.name).sort());
    for (const tool of allTools) {
      const s = section(tool.name);
      expect(s).toContain(`- Family: \`${tool.family}\` · tag: \`${tool.tag}\``);
      expect(s).toContain(tool.mutates ? 'mutates: yes' : 'mutates: no');
      if (tool.surfaces?.mcp) expect(s).toContain(`- MCP: \`${tool.surfaces.mcp}\``);
      const http = tool.surfaces?.http;
      for (const binding of Array.isArray(http) ? http : http ? [http] : []) {
        const path = binding.path.replace(/:([A-Za-z_]+)/g, '{$1}');
        expect(s).toContain(`- HTTP: \`${binding.method} ${path}\``);
      }
      const cli = tool.surfaces?.cli;
      for (const binding of Array.isArray(cli) ? cli : cli ? [cli] : []) {
        expect(s).toContain(`- CLI: \`svc ${binding.command}`);
      }
    }
  });

  it('says in words what closes a gate, from the gate itself', () => {
    expect(section('get_operating_mode')).toContain(
      '- Gate: closed by default: options.operating_packs is false',
    );
    expect(section('daemon_restart')).toContain(
      '- Gate: closed by default: SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS is not set in the process',
    );
    expect(section('operator_cognition_readout')).toContain(
      '- MCP: `svc_operator_cognition_readout` (MCP gate closed by default: stigmergy read tools are off',
    );
    expect(section('view')).not.toContain('- Gate:');
  });

  it('lists every input field with its type, default and description', () => {
    const view = section('view');
    expect(view).toMatch(/\| `path` \| string[^|]* \| yes \| {2}\| .+ \|/);
    expect(view).toMatch(/\| `limit` \| integer[^|]* \| {2}\| `400` \|/);
    expect(section('execute_dag')).toContain('| `tasks[].id` |');
  });
});
