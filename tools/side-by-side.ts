// What the side-by-side measurement tools share (tools/decode-overhead.ts, tools/ongpu-overhead.ts,
// tools/conv-passes.ts: two or more source trees of the library timed in one process on one device): their
// `--name value` options, the `--trees name=path,...` list, and the median they report.

import { resolve } from 'node:path';

/** The value after `--name` on the command line, else `dflt`. */
export function option(name: string, dflt: string): string {
  const args = process.argv.slice(2);
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
}

/** The source trees to compare, from `--trees name=path,...` (paths resolved from the working folder). */
export function sourceTrees(dflt: string): { name: string; root: string }[] {
  return option('--trees', dflt)
    .split(',')
    .map((t) => {
      const [name, path] = t.split('=');
      return { name, root: resolve(path) };
    });
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
