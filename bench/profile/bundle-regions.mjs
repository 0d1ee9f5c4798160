// Which svc source a line of the built bundle comes from: the bundler marks each module's code with
// `//#region src/…`, so a profile frame's (file, line) in dist/ names its source file. Shared by the
// profile readers in this folder.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** For each `.js` file in `distDir`, the region (source path) of each of its lines, 0-based. */
export function bundleRegions(distDir) {
  const regions = new Map();
  for (const name of readdirSync(distDir).filter((f) => f.endsWith('.js'))) {
    let current = '?';
    regions.set(
      name,
      readFileSync(join(distDir, name), 'utf8')
        .split('\n')
        .map((line) => {
          const match = /^\/\/#region (.*)$/.exec(line);
          if (match) current = match[1];
          return current;
        }),
    );
  }
  return regions;
}

/** The svc source of a frame in a bundled file, or undefined when the frame is not in dist/. */
export function bundledSource(regions, url, lineNumber) {
  const bundled = /\/dist\/([^/]+\.js)$/.exec(url);
  return bundled ? (regions.get(bundled[1])?.[lineNumber] ?? bundled[1]) : undefined;
}
