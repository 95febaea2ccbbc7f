// Whether a build under dist/ is older than its sources, for the browser tests that rebuild it before
// loading it in Chromium.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Newest modification time of the files under these folders (0 when none). */
export function newest(dirs: string[]): number {
  let t = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else t = Math.max(t, statSync(p).mtimeMs);
    }
  };
  for (const d of dirs) if (existsSync(d)) walk(d);
  return t;
}
