declare const __SVC_VERSION__: string | undefined;

/** Replaced at build time (tsdown/vitest `define`), so `svc --version` reads no file. */
export const VERSION: string = typeof __SVC_VERSION__ !== 'undefined' ? __SVC_VERSION__ : '0.0.0-dev';
