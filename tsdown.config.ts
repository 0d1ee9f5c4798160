import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type UserConfig } from 'tsdown';
import { asciiChunks } from './build/ascii-chunks';
import { jsonText } from './build/json-text';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

/**
 * Modules that a bundled package imports but svc never runs, replaced per importer (issue 17):
 * `ai`'s gateway provider (and its OIDC client) and OpenTelemetry API, and the zod 3 runtime that
 * @ai-sdk/provider-utils loads for one enum. See build/shims/.
 */
const SHIMS: { id: string; importer: RegExp; file: string }[] = [
  { id: '@ai-sdk/gateway', importer: /node_modules\/ai\//, file: 'build/shims/ai-gateway.mjs' },
  { id: '@opentelemetry/api', importer: /node_modules\/ai\//, file: 'build/shims/opentelemetry-api.mjs' },
  { id: 'zod/v3', importer: /node_modules\/@ai-sdk\/provider-utils\//, file: 'build/shims/zod-v3-kinds.mjs' },
];

// One ESM entry; everything imported with `await import()` lands in its own chunk, so
// `svc --version` loads almost nothing. The pure-JS dependencies on the hot paths (the AI SDK and
// its providers, zod, hono, the config and CLI parsers) are bundled and tree-shaken: `svc run`
// opens a few dozen files instead of ~250 in node_modules. Native modules (better-sqlite3), the
// PostgreSQL driver (pg, imported only when `[store] url` names PostgreSQL), the packages that
// locate files next to themselves (ripgrep, tree-sitter) and the TUI's packages stay in
// node_modules. `ai/internal` (the step driver's `await import`) is bundled too: external, it loaded
// the package's own build with all of zod 4 (66 locales), zod 3, the gateway and OIDC packages.
const common = {
  entry: { main: 'src/main.ts' },
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  dts: false,
  sourcemap: false,
  define: { __SVC_VERSION__: JSON.stringify(version) },
  deps: {
    alwaysBundle: [
      /^ai(\/internal)?$/,
      /^@ai-sdk\//,
      /^@openrouter\//,
      /^zod(\/|$)/,
      /^hono(\/|$)/,
      /^@hono\//,
      /^smol-toml$/,
      /^commander$/,
      /^eventsource-parser(\/|$)/,
      /^diff$/,
      /^cron-parser$/,
    ],
    neverBundle: [
      /^better-sqlite3/,
      // the PostgreSQL driver: loaded with `await import('pg')` only when `[store] url` names one
      /^pg(\/|$)/,
      /^ink(\/|$)/,
      /^ink-/,
      /^react(\/|$)/,
      /^@vscode\//,
      /^web-tree-sitter/,
      /^chalk$/,
      /^lowlight$/,
      // the TUI's grammars: each loads on first use, by its own file (src/surfaces/tui/render/highlight.ts)
      /^highlight\.js(\/|$)/,
      /^marked$/,
    ],
  },
  plugins: [
    // every chunk written as ASCII: V8 then holds its source as one-byte (build/ascii-chunks.ts)
    asciiChunks(),
    // the generated tool input schemas as one JSON text per tool, parsed on first use (build/json-text.ts)
    jsonText(/src\/tools\/core\/input-schemas\.generated\.json$/),
    {
      name: 'svc-shims',
      // Before tsdown's dependency plugin: a shimmed id that is also a dependency of svc
      // (@opentelemetry/api, for otel.ts) would otherwise be left external, and loaded.
      resolveId: {
        order: 'pre',
        handler(id: string, importer: string | undefined) {
          const shim = SHIMS.find((s) => s.id === id && importer && s.importer.test(importer));
          return shim ? resolve(shim.file) : null;
        },
      },
    },
  ],
} satisfies UserConfig;

// Two builds of the same entry into dist/: the ESM bundle (dist/main.js, what every command but
// `svc run` loads, and what tests spawn) and a CommonJS one (dist/main.cjs and *.cjs chunks) that
// bin/svc.cjs loads for `svc run` on Node < 22.1 through V8's code cache (no
// module.enableCompileCache there; ESM cannot use vm's cachedData without a flag): the run path
// then skips compiling the bundle (issue 17). Its `import.meta.url` is shimmed from __filename.
// Only the first cleans dist/.
export default defineConfig([
  {
    ...common,
    format: 'esm',
    // dist/web is the browser UI, built by Vite after this (vite.web.config.ts): keep it.
    clean: ['dist/*', '!dist/web'],
    shims: false,
    fixedExtension: false,
  },
  {
    ...common,
    format: 'cjs',
    clean: false,
    shims: true,
    fixedExtension: true,
    // `import()` of a package left in node_modules becomes require() (Node 20.19+ requires ESM
    // too): a vm.Script compiled from a code cache loses its dynamic-import callback on Node 20
    // (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so the chunks must not use `import()`.
    outputOptions: { dynamicImportInCjs: false },
  },
]);
