// Strict JSON for the CLI's specs and `--pipeline` values. JSON.parse lets the last of two equal keys
// win silently and has no depth limit (a spec nested 100,000 deep overflows the stack of whoever walks
// it later); this parser rejects duplicate keys (naming the key's path, e.g. `pipeline[0].shift`),
// nesting deeper than MAX_JSON_DEPTH and text longer than the caller's cap. Errors are InputErrors on
// the caller's field with a line:column position. `brief` (src/problem/echo.ts, re-exported) is the one way a
// value from the input is echoed into a message: cut to about 100 characters.

import { InputError } from '../errors.ts';
import { keyField } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';

/** Deeper than any spec needs (a spec is 4 deep: spec -> pipeline -> stage -> values). */
const MAX_JSON_DEPTH = 32;

export { brief };

/** A value's path as a field (keys as keyField names them), cut where it is long. */
const pathField = (path: string): string => (path.length > 100 ? `${path.slice(0, 100)}...` : path);

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const SPACE = /[ \t\n\r]*/y;

class Parser {
  private pos = 0;
  constructor(
    private readonly text: string,
    private readonly field: string,
    private readonly root: string,
  ) {}

  parseDocument(): unknown {
    this.space();
    const value = this.value(0, this.root);
    this.space();
    if (this.pos < this.text.length) this.fail('unexpected text after the JSON value');
    return value;
  }

  private value(depth: number, path: string): unknown {
    const c = this.text.charAt(this.pos);
    if (c === '{' || c === '[') {
      if (depth >= MAX_JSON_DEPTH) this.fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
      return c === '{' ? this.object(depth + 1, path) : this.array(depth + 1, path);
    }
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number(path);
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    return this.fail(c === '' ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
  }

  private object(depth: number, path: string): Record<string, unknown> {
    this.pos++;
    const out: Record<string, unknown> = {};
    this.space();
    if (this.eat('}')) return out;
    for (;;) {
      this.space();
      if (this.text.charAt(this.pos) !== '"') this.fail('expected a quoted key');
      const keyAt = this.pos;
      const key = this.string();
      const keyPath = keyField(path, key);
      if (Object.hasOwn(out, key)) {
        throw new InputError(pathField(keyPath), `duplicate key (${this.where(keyAt)}); each key may appear once`);
      }
      this.space();
      if (!this.eat(':')) this.fail("expected ':' after a key");
      this.space();
      // defineProperty: a key named "__proto__" is data, never the object's prototype.
      Object.defineProperty(out, key, { value: this.value(depth, keyPath), enumerable: true, writable: true, configurable: true });
      this.space();
      if (this.eat('}')) return out;
      if (!this.eat(',')) this.fail("expected ',' or '}'");
    }
  }

  private array(depth: number, path: string): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    this.space();
    if (this.eat(']')) return out;
    for (;;) {
      this.space();
      out.push(this.value(depth, `${path}[${out.length}]`));
      this.space();
      if (this.eat(']')) return out;
      if (!this.eat(',')) this.fail("expected ',' or ']'");
    }
  }

  /** A string token, scanned by hand (a regexp over megabytes of escapes overflows V8's regexp stack). */
  private string(): string {
    const start = this.pos;
    const text = this.text;
    let i = start + 1;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (Number.isNaN(c)) this.fail('unterminated string');
      if (c < 0x20) this.fail('a control character in a string (escape it)');
      if (c === 0x5c) {
        const e = text.charAt(i + 1);
        if (e === 'u' ? !/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)) : !'"\\/bfnrt'.includes(e) || e === '') {
          this.pos = i;
          this.fail('bad escape in a string');
        }
        i += e === 'u' ? 6 : 2;
      } else {
        i++;
      }
    }
    this.pos = i + 1;
    return JSON.parse(text.slice(start, i + 1)) as string;
  }

  /**
   * A number token. One past what a double holds is refused, naming the value's path: Number() would read
   * `1e-400` as 0 and `1e400` as Infinity, and the checks after it would see a 0 that nobody wrote.
   */
  private number(path: string): number {
    NUMBER.lastIndex = this.pos;
    const at = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) this.fail('bad number');
    this.pos += m[0].length;
    const v = Number(m[0]);
    const nonzero = /[1-9]/.test(m[0].split(/[eE]/)[0]);
    if (!Number.isFinite(v) || (v === 0 && nonzero)) {
      const field = path ? pathField(path) : this.field;
      const what = v === 0 ? 'too small: it would read as 0' : 'too large: it would read as infinite';
      const literal = m[0].length > 40 ? `${m[0].slice(0, 40)}...` : m[0];
      throw new InputError(field, `${literal} is ${what} (${this.where(at)}); a number must lie within a double's range`);
    }
    return v;
  }

  private eat(c: string): boolean {
    if (this.text.charAt(this.pos) !== c) return false;
    this.pos++;
    return true;
  }

  private space(): void {
    SPACE.lastIndex = this.pos;
    this.pos += SPACE.exec(this.text)![0].length;
  }

  private where(at: number): string {
    let line = 1;
    let lineStart = 0;
    for (let i = this.text.indexOf('\n'); i >= 0 && i < at; i = this.text.indexOf('\n', i + 1)) {
      line++;
      lineStart = i + 1;
    }
    return `line ${line} column ${at - lineStart + 1}`;
  }

  private fail(message: string): never {
    throw new InputError(this.field, `not valid JSON: ${message} at ${this.where(this.pos)}`);
  }
}

/**
 * Parses `text` strictly; every problem is an InputError on `field`, or on the duplicated key's path
 * (`root` names the document itself in that path: '' for a spec, '--pipeline' for that flag's array).
 */
export function parseStrictJson(text: string, field: string, root = ''): unknown {
  return new Parser(text, field, root).parseDocument();
}
