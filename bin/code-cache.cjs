// `svc run` on Node < 22.1 (issue 17): load the CommonJS build of the bundle (dist/main.cjs and
// its *.cjs chunks, tsdown.config.ts) through V8's code cache, so a run skips compiling the code
// it loads (~20% of the CPU of a short run on Node 20). Node 22.1+ has module.enableCompileCache
// and never comes here (bin/svc.cjs).
//
// Each chunk is compiled with vm.Script and the cachedData kept for it in the user cache dir
// (`$XDG_CACHE_HOME/svc/code-cache/`, else `~/.cache/svc/code-cache/`). A cache file is used only
// when its header names this Node, this architecture and this exact file (path, size, mtime,
// inode) and its checksum matches; V8 checks the rest (its version, flags, the source) and
// rejects what does not fit. A missing, corrupt, foreign or rejected cache is ignored: the chunk
// is compiled as usual and its cache written when the process exits (to a temporary file, then
// renamed). Entries of older builds are removed then. SVC_CODE_CACHE=0 (or
// NODE_DISABLE_COMPILE_CACHE=1) turns it off: `svc run` then loads dist/main.js like every other
// command.
'use strict';
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');
const zlib = require('node:zlib');
const crypto = require('node:crypto');

const MAGIC = 'svc-code-cache 1';

function cacheDir(env, distDir) {
  const root = env.XDG_CACHE_HOME
    ? path.join(env.XDG_CACHE_HOME, 'svc')
    : env.HOME
      ? path.join(env.HOME, '.cache', 'svc')
      : undefined;
  if (!root) return undefined;
  const build = crypto.createHash('sha256').update(distDir).digest('hex').slice(0, 12);
  return path.join(root, 'code-cache', `${build}-node${process.versions.node}-${process.arch}`);
}

function checksum(buffer) {
  return typeof zlib.crc32 === 'function'
    ? zlib.crc32(buffer).toString(16)
    : crypto.createHash('sha1').update(buffer).digest('hex');
}

function keyOf(filename) {
  try {
    const s = fs.statSync(filename);
    return `${process.version}|${process.arch}|${filename}|${s.size}|${s.mtimeMs}|${s.ino}`;
  } catch {
    return undefined;
  }
}

/** The cached data in `file` when its header matches `key` and its checksum; else undefined. */
function readCache(file, key) {
  let buffer;
  try {
    buffer = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  const newline = buffer.indexOf(10);
  if (newline < 0 || newline > 4096) return undefined;
  try {
    const header = JSON.parse(buffer.subarray(0, newline).toString('utf8'));
    const data = buffer.subarray(newline + 1);
    if (header.magic !== MAGIC || header.key !== key || header.length !== data.length) return undefined;
    return header.checksum === checksum(data) ? data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `mkdir -p` of `dir` that ends (src/util/make-dirs.ts says why: Node's recursive mkdir never
 * returns under `/proc`, e.g. with XDG_CACHE_HOME there, and this runs as the process exits).
 */
function makeDirs(dir) {
  try {
    fs.mkdirSync(dir);
    return;
  } catch (error) {
    if (error.code === 'EEXIST' && fs.statSync(dir).isDirectory()) return;
    if (error.code !== 'ENOENT' || path.dirname(dir) === dir) throw error;
  }
  makeDirs(path.dirname(dir));
  fs.mkdirSync(dir);
}

function writeCaches(fresh, dir, distDir) {
  try {
    makeDirs(dir);
  } catch {
    return;
  }
  for (const { script, file, key } of fresh) {
    const tmp = `${file}.${process.pid}.tmp`;
    try {
      const data = script.createCachedData();
      const header = JSON.stringify({ magic: MAGIC, key, length: data.length, checksum: checksum(data) });
      fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${header}\n`), data]));
      fs.renameSync(tmp, file);
    } catch {
      try {
        fs.rmSync(tmp, { force: true });
      } catch {
        // nothing to remove
      }
    }
  }
  // Entries of chunks no longer in dist/ (an older build), and of other Node versions.
  try {
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith('.bin') && !fs.existsSync(path.join(distDir, name.slice(0, -4)))) {
        fs.rmSync(path.join(dir, name), { force: true });
      }
    }
    const parent = path.dirname(dir);
    const build = path.basename(dir).split('-')[0];
    for (const name of fs.readdirSync(parent)) {
      if (name !== path.basename(dir) && name.startsWith(`${build}-`)) {
        fs.rmSync(path.join(parent, name), { recursive: true, force: true });
      }
    }
  } catch {
    // another process is cleaning up too
  }
}

/** A `require` for a module compiled here, as Node's loader would give it. */
function requireFor(mod) {
  const req = (id) => mod.require(id);
  req.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  req.resolve.paths = (request) => Module._resolveLookupPaths(request, mod);
  req.main = require.main;
  req.cache = Module._cache;
  req.extensions = Module._extensions;
  return req;
}

/**
 * Start dist/main.cjs with the code cache. Returns false, having loaded nothing, when it cannot
 * be used here (turned off, no CommonJS build, no user cache dir, a Node without vm's default
 * loader for `import()`): the caller then loads dist/main.js.
 */
function runWithCodeCache(distDir, env) {
  if (env.SVC_CODE_CACHE === '0' || env.NODE_DISABLE_COMPILE_CACHE) return false;
  const importDefault = vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  const main = path.join(distDir, 'main.cjs');
  const dir = cacheDir(env, distDir);
  if (!importDefault || !dir || !fs.existsSync(main)) return false;

  // `import()` of an ESM-only package from a chunk goes through vm's default loader, which Node
  // 20 calls experimental on first use: not svc's business to print.
  const emitWarning = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    const message = typeof warning === 'string' ? warning : warning?.message;
    if (typeof message === 'string' && message.startsWith('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
    return emitWarning.call(process, warning, ...rest);
  };

  const prefix = distDir + path.sep;
  const compile = Module.prototype._compile;
  const fresh = [];
  Module.prototype._compile = function (content, filename) {
    if (!filename.startsWith(prefix) || !filename.endsWith('.cjs'))
      return compile.call(this, content, filename);
    const key = keyOf(filename);
    const file = key ? path.join(dir, `${path.basename(filename)}.bin`) : undefined;
    const cachedData = file ? readCache(file, key) : undefined;
    // A hashbang is valid only at the very start of a script, not inside the module wrapper.
    const source = content.startsWith('#!') ? `//${content.slice(2)}` : content;
    const script = new vm.Script(Module.wrap(source), {
      filename,
      cachedData,
      importModuleDynamically: importDefault,
    });
    if (file && (!cachedData || script.cachedDataRejected)) fresh.push({ script, file, key });
    const fn = script.runInThisContext({ displayErrors: true });
    return fn.call(this.exports, this.exports, requireFor(this), this, filename, path.dirname(filename));
  };
  process.once('exit', () => {
    if (fresh.length > 0) writeCaches(fresh, dir, distDir);
  });
  require(main);
  return true;
}

module.exports = { runWithCodeCache };
