// `npm run build`'s declaration step: tsc -p tsconfig.build.json emits dist/types/**/*.d.ts for the
// public entries (src/index.ts, src/cpu.ts); this then rewrites their relative `.ts` import specifiers
// to `.js` (tsc keeps `.ts` in declarations, which strict nodenext consumers refuse) and makes every
// declaration that names a GPU* or WebAssembly.* type import it from dist/types/env-types.d.ts (a copy
// of tools/env-types.d.ts: the consumer's own types where it has them, `unknown` where not), so the
// package brings no second copy of the WebGPU types into a program whose DOM library declares them,
// and needs no DOM library where it has none.
// test/package/pack.test.ts checks the result in a fresh consumer project, with TypeScript 5.9 and 7.
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/types');
rmSync(out, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
const envTypes = join(out, 'env-types.d.ts');
copyFileSync(join(root, 'tools/env-types.d.ts'), envTypes);
const aliases = new Set([...readFileSync(envTypes, 'utf8').matchAll(/^export type (\w+)/gm)].map((m) => m[1]));
let files = 0;
for (const file of walk(out).filter((f) => f.endsWith('.d.ts') && f !== envTypes)) {
  let text = readFileSync(file, 'utf8');
  // from './x.ts', import('./x.ts'): relative specifiers only.
  text = text.replace(/((?:from\s+|import\()\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1$2.js$3');
  if (/\.ts['"]/.test(text.replace(/\.d\.ts/g, ''))) throw new Error(`${file}: a .ts specifier is left`);
  // WebAssembly.Module is WebAssemblyModule; then the GPU* and WebAssembly* names the code (not its
  // comments) uses, each one that env-types.d.ts declares.
  text = text.replace(/\bWebAssembly\.([A-Z]\w*)/g, 'WebAssembly$1');
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const used = [...new Set([...code.matchAll(/\b(?:GPU(?:[A-Z]\w*)?|WebAssembly\w*)\b/g)].map((m) => m[0]))].sort();
  const unknown = used.filter((n) => !aliases.has(n));
  if (unknown.length > 0) throw new Error(`${file}: ${unknown.join(', ')} not declared in tools/env-types.d.ts`);
  if (/reference types=/.test(text)) throw new Error(`${file}: a types reference is left`);
  if (used.length > 0) {
    let from = relative(dirname(file), envTypes).replace(/\.d\.ts$/, '.js');
    if (!from.startsWith('.')) from = `./${from}`;
    text = `import type { ${used.join(', ')} } from '${from}';\n${text}`;
  }
  writeFileSync(file, text);
  files++;
}
console.log(`dist/types: ${files} declaration files`);
