// A Node module hook for running the library's TypeScript sources straight from a tree (Node 24 with
// --experimental-transform-types), outside vite: `*.wgsl?raw` imports become their text, as vite's
// `?raw` makes them, an eager `import.meta.glob('./dir/*.json', ...)` becomes the object of those files'
// parsed contents, as vite makes it, and `wgsl_reflect` resolves to its ES module build. Used by tools/decode-overhead.ts:
//   node --import ./tools/ts-raw-hook.mjs --experimental-transform-types --no-warnings tools/decode-overhead.ts ...
import { readdirSync, readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    if (specifier !== 'wgsl_reflect') return resolved;
    return { ...resolved, url: resolved.url.replace(/wgsl_reflect\.node\.js$/, 'wgsl_reflect.module.js') };
  },
  load(url, context, next) {
    if (url.endsWith('.ts') && url.startsWith('file:')) {
      const source = readFileSync(fileURLToPath(url), 'utf8');
      if (!source.includes('import.meta.glob(')) return next(url, context);
      const dir = fileURLToPath(new URL('.', url));
      const globbed = source.replace(/import\.meta\.glob\('\.\/([\w-]+)\/\*\.json'[^)]*\)/g, (_, sub) => {
        const files = readdirSync(`${dir}${sub}`).filter((f) => f.endsWith('.json'));
        const entries = files.map((f) => `${JSON.stringify(`./${sub}/${f}`)}: ${readFileSync(`${dir}${sub}/${f}`, 'utf8')}`);
        return `({${entries.join(',')}})`;
      });
      return { format: 'module-typescript', source: globbed, shortCircuit: true };
    }
    if (!url.endsWith('?raw')) return next(url, context);
    const text = readFileSync(fileURLToPath(url.slice(0, -'?raw'.length)), 'utf8');
    return { format: 'module', source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  },
});
