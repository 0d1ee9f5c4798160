/**
 * The layering check (docs/architecture.md): imports point down only, type imports included.
 *   surfaces/ → app.ts → tools/ → domains → infra
 * Run: npm run check:layers
 */
const INFRA =
  '^src/(config|store|events|shell|sandbox|workspace|util)/|^src/(log|errors|redact|version)\\.ts$';
const SURFACES = '^src/(surfaces/|main\\.ts$)';
const APP = '^src/app(\\.ts$|/)';
const TOOLS = '^src/tools/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle anywhere in src/, type imports included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domains-not-up',
      comment: 'A domain never imports app.ts, a surface or the tool layer.',
      severity: 'error',
      from: { path: '^src/', pathNot: [SURFACES, APP, TOOLS, INFRA] },
      to: { path: [APP, SURFACES, TOOLS] },
    },
    {
      name: 'tools-not-up',
      comment: 'Tool handlers see ToolHost (tools/core/types.ts), never app.ts or a surface.',
      severity: 'error',
      from: { path: TOOLS },
      to: { path: [APP, SURFACES] },
    },
    {
      name: 'infra-imports-no-domain',
      comment: 'Infra (config, store, events, shell, sandbox, workspace, log, util) imports only infra.',
      severity: 'error',
      from: { path: INFRA },
      to: { path: '^src/', pathNot: INFRA },
    },
    {
      name: 'app-not-surfaces',
      comment: 'createApp wires domains and tools; surfaces sit on top of it.',
      severity: 'error',
      from: { path: APP },
      to: { path: SURFACES },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['\\.test\\.tsx?$', '^src/surfaces/web/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.json'] },
  },
};
