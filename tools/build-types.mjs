// `npm run build`'s declaration step: tsc -p tsconfig.build.json emits dist/types/**/*.d.ts for the
// public entries (src/index.ts, src/cpu.ts); this then rewrites their relative `.ts` import specifiers
// to `.js` (tsc keeps `.ts` in declarations, which strict nodenext consumers refuse) and makes both
// entries reference @webgpu/types (the GPU* globals some declarations name; a dependency of the package). test/package/pack.test.ts checks the result in a
// fresh consumer project.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/types');
rmSync(out, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
let files = 0;
for (const file of walk(out).filter((f) => f.endsWith('.d.ts'))) {
  let text = readFileSync(file, 'utf8');
  // from './x.ts', import('./x.ts'): relative specifiers only.
  text = text.replace(/((?:from\s+|import\()\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1$2.js$3');
  if (/\.ts['"]/.test(text.replace(/\.d\.ts/g, ''))) throw new Error(`${file}: a .ts specifier is left`);
  if (file === join(out, 'index.d.ts') || file === join(out, 'cpu.d.ts')) text = `/// <reference types="@webgpu/types" />\n${text}`;
  writeFileSync(file, text);
  files++;
}
console.log(`dist/types: ${files} declaration files`);
