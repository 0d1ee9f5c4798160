import { defineConfig } from 'vite';

// The browser UI (src/surfaces/web) → dist/web, served by the HTTP service at `/`. Relative asset
// URLs (base './') so the page works behind a reverse proxy under any path prefix. Run after
// tsdown (whose clean keeps dist/web). No inline scripts (the CSP forbids them), no source maps.
export default defineConfig({
  root: 'src/surfaces/web',
  base: './',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../../../dist/web',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
  },
});
