// Reading WGSL source as text, for the few places that rewrite a shader before it compiles (the
// subgroup-matrix kernel's load form, src/kernels/sgmat/load-form.ts; the tests' poisoned and
// bounds-checked copies, test/support/): where a bracket closes, and a list split at its top-level commas.

/**
 * Splits `text` at its top-level commas (not inside (), [] or <>), trimmed. `angles`: count <> as
 * brackets (a template list); in an argument list they may be comparisons, so only () and [] count.
 */
export function splitTopLevel(text: string, angles: boolean): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '(' || ch === '[' || (angles && ch === '<')) depth++;
    else if (ch === ')' || ch === ']' || (angles && ch === '>')) depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(from, i).trim());
      from = i + 1;
    }
  }
  parts.push(text.slice(from).trim());
  return parts;
}

const PAIRS: Record<string, string> = { '(': ')', '<': '>', '[': ']' };

/** Where the bracket opened at `open` closes (`(` with `)`, `<` with `>`, `[` with `]`, nesting counted), or -1. */
export function closing(text: string, open: number): number {
  const o = text[open];
  const c = PAIRS[o];
  if (!c) return -1;
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === o) depth++;
    else if (text[i] === c && --depth === 0) return i;
  }
  return -1;
}
