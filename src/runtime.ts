// Which JavaScript runtime the library runs in, for the few places that differ (plumbing under every
// stage of pack -> gemm -> output): Node's `process` and the environment's QGEMM_* switches, read through
// globalThis so that bundlers leave them alone, and imports of Node-only modules that a browser bundle
// must not resolve.

/** What the library reads of Node's `process`. */
export interface NodeProcessLike {
  versions?: { node?: string } | undefined;
  platform?: string | undefined;
  env: Record<string, string | undefined>;
  cwd(): string;
}

/** Node's `process`, read through globalThis so that bundlers leave it alone; undefined in browsers. */
export function nodeProcess(): NodeProcessLike | undefined {
  const p = (globalThis as { process?: NodeProcessLike }).process;
  return p?.versions?.node ? p : undefined;
}

/**
 * The environment variables of a `process`, Node's or a bundler's stand-in (the QGEMM_* switches);
 * undefined where there is none.
 */
export function processEnv(): Record<string, string | undefined> | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
}

/** Imports a module by a specifier the bundler must not resolve (Node-only modules in a browser bundle). */
export function runtimeImport<T>(specifier: string): Promise<T> {
  return import(/* @vite-ignore */ /* webpackIgnore: true */ specifier) as Promise<T>;
}
