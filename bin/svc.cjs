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
  // Node 22.1+: keep V8's compiled code of the bundle on disk (in the OS temp dir), so the next
  // start skips compiling it (10-17% of a short command on Node 24). Node 20 has no such cache;
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  require('node:module').enableCompileCache?.();
  const { pathToFileURL } = require('node:url');
  const { join } = require('node:path');
  import(pathToFileURL(join(__dirname, '..', 'dist', 'main.js')).href).catch((error) => {
    process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
