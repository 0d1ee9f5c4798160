/**
 * What `bin/svc.cjs` runs before it loads the ESM bundle, from the CommonJS build
 * (`dist/preflight.cjs`): `svc service start …` runs itself again with glibc's malloc tuned
 * (`reexecWithTunedMalloc`, util/malloc.ts) from here, so the image it replaces has loaded only
 * this and its chunks, not Node's ESM loader and the bundle's entry. `main.ts` makes the same call
 * for a start through `dist/main.js` (the tests, the benches); the second call in a process does
 * nothing.
 * @module
 */

import { reexecWithTunedMalloc } from '../../util/malloc';
import { startsService } from './argv-peek';

export function preflight(argv: readonly string[]): void {
  if (startsService(argv)) reexecWithTunedMalloc();
}
