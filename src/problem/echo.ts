// How a value from the caller's input is echoed into an error message, in the library and the CLI alike
// (every stage of pack -> gemm -> output validates through src/problem/ first): short and on one line. A
// string is cut at ECHO_CHARS characters, a container is named by its kind and length and never printed
// whole (a Float64Array(1e6) zero point once made a 10.9 MB message), and a number or a BigInt prints as
// itself (Infinity, NaN, 3n), where JSON.stringify would print "null" or throw; undefined, which a JSON
// spec cannot hold, is a missing field.

/** The most characters of a string echoed. */
const ECHO_CHARS = 100;

/** A value from the input, for a message: short, one line, never the whole of a large value. */
export function brief(v: unknown): string {
  if (typeof v === 'string') {
    const cut = v.length > ECHO_CHARS;
    return `${JSON.stringify(cut ? v.slice(0, ECHO_CHARS) : v)}${cut ? `... (${v.length} characters)` : ''}`;
  }
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v === null) return 'null';
  if (v === undefined) return 'nothing (missing)'; // a JSON spec's absent field, a library caller's undefined
  if (typeof v === 'object') {
    if (ArrayBuffer.isView(v)) {
      const length = (v as { length?: unknown }).length;
      return typeof length === 'number' ? `a ${v.constructor.name} of ${length}` : `a ${v.constructor.name}`;
    }
    return 'an object';
  }
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'a function';
  return String(v).slice(0, ECHO_CHARS);
}
