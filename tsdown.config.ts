import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsdown';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

// One ESM entry; everything imported with `await import()` lands in its own chunk, so
// `svc --version` loads almost nothing. Dependencies stay in node_modules (not bundled).
export default defineConfig({
  entry: { main: 'src/main.ts' },
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  // dist/web is the browser UI, built by Vite after this (vite.web.config.ts): keep it.
  clean: ['dist/*', '!dist/web'],
  dts: false,
  sourcemap: false,
  shims: false,
  fixedExtension: false,
  define: { __SVC_VERSION__: JSON.stringify(version) },
});
