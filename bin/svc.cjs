#!/usr/bin/env node
// The `svc` command. CommonJS on purpose: `svc --version` answers before Node sets up its ESM
// loader (about 5 ms of a 60 ms start on a 2-core box, issue 17); every other command imports the
// ESM bundle (dist/main.js), which reads the same argv.
'use strict';
const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  const { readFileSync } = require('node:fs');
  const { join } = require('node:path');
  process.stdout.write(
    `${JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).version}\n`,
  );
} else {
  const { join } = require('node:path');
  const fail = (error) => {
    process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  };
  const { enableCompileCache } = require('node:module');
  let started = false;
  if (enableCompileCache) {
    // Node 22.1+: keep V8's compiled code of the bundle on disk (in the OS temp dir), so the next
    // start skips compiling it (10-17% of a short command on Node 24).
    // NODE_DISABLE_COMPILE_CACHE=1 turns it off.
    enableCompileCache();
  } else if (argv[0] === 'run') {
    // Node 20 has no such cache: `svc run` loads the CommonJS build through a code cache of its
    // own (./code-cache.cjs; SVC_CODE_CACHE=0 turns it off).
    let runWithCodeCache;
    try {
      ({ runWithCodeCache } = require('./code-cache.cjs'));
    } catch {
      // not installed next to this file: load dist/main.js
    }
    try {
      started = runWithCodeCache?.(join(__dirname, '..', 'dist'), process.env) ?? false;
    } catch (error) {
      started = true;
      fail(error);
    }
  }
  if (!started) {
    const { pathToFileURL } = require('node:url');
    import(pathToFileURL(join(__dirname, '..', 'dist', 'main.js')).href).catch(fail);
  }
}
