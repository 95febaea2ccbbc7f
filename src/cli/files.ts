// The CLI's file system boundary: every file it reads or writes goes through here.
// - Paths: a NUL or an over-long path is bad input; with `confine`, a relative path may not leave its
//   base folder (`qgemm run`: the spec's folder) unless the user passes --allow-outside.
//   The folder rule is checked on real paths: a symlinked folder or file does not lead out of it.
// - Reads: regular files only, opened non-blocking (a FIFO never hangs, /dev/zero is never read), and
//   an .npy file's size is checked against its header (the largest array, and the memory budget) before
//   its data is read, in chunks (one read() call takes at most 2^31 - 1 bytes).
// - Writes (`out`): refused when it ends with a slash, is a symlink, FIFO, device, directory,
//   write-protected, not writable, or the same file as an input; otherwise the result goes to a temporary
//   file beside it, written in chunks, that is renamed into place, so a failure leaves no partial file and
//   the old file untouched. A replaced file keeps its mode; a new one gets the umask's. SIGINT, SIGTERM
//   and SIGHUP wait for the rename, then end the process as they would have (holdSignals).
// - Errors: a problem with what the user named is an InputError on the field (exit 2); trouble of the
//   machine (disk full, I/O error, too many open files) is an IoError (exit 1).

import {
  accessSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { kMaxLength } from 'node:buffer';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { InputError, QgemmError } from '../errors.ts';
import { NPY_PREAMBLE_BYTES, NpyFormatError, npyFromData, npyHeaderEnd, parseNpyLayout, type NpyArray, type NpyLayout } from '../io/npy.ts';
import { brief } from './json.ts';
import type { MemoryBudget } from './budget.ts';

/** A failure of the machine, not of the input (exit 1). */
class IoError extends QgemmError {
  override name = 'IOError';
}

/** Codes that say the path the user gave is wrong; anything else is the machine's trouble. */
const INPUT_CODES: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a component of the path is not a folder',
  EISDIR: 'is a folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENAMETOOLONG: 'name too long',
  ELOOP: 'too many levels of symbolic links',
  EROFS: 'read-only file system',
  EEXIST: 'already exists',
  EINVAL: 'invalid path',
  ENXIO: 'no such device',
  ETXTBSY: 'file busy',
  ERR_INVALID_ARG_VALUE: 'invalid path',
  ERR_INVALID_ARG_TYPE: 'invalid path',
};

/** Longest path accepted (Linux's PATH_MAX). */
const MAX_PATH = 4096;
/** Largest .npy header read (numpy itself refuses headers over 10,000 bytes by default). */
const MAX_NPY_HEADER = 1 << 20;

/** The most bytes an .npy file's data may hold: the largest typed array of this runtime. */
export const MAX_NPY_DATA_BYTES = kMaxLength;

/** Bytes per read() or write() call: Node takes at most 2^31 - 1 a call. */
const IO_CHUNK_BYTES = 2 ** 30;
let ioChunk = IO_CHUNK_BYTES;
/** Test hook: a small chunk size exercises the loops on small files; no argument restores the default. */
export function setIoChunkBytes(bytes = IO_CHUNK_BYTES): void {
  ioChunk = bytes;
}

/** Refuses, before anything is read, data that no array of this runtime can hold. */
export function checkNpyDataSize(field: string, path: string, bytes: number): void {
  if (bytes > MAX_NPY_DATA_BYTES) {
    throw new InputError(field, `${shown(path)} holds ${bytes} bytes of data; at most ${MAX_NPY_DATA_BYTES} fit in one array here`);
  }
}

/** A path for a message: cut like any other echoed value. */
export function shown(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}... (${path.length} characters)` : path;
}

/** Maps a file system error on `path` to an InputError on `field` (exit 2) or an IoError (exit 1). */
function fsError(field: string, path: string, verb: string, e: unknown): Error {
  if (e instanceof QgemmError) return e;
  const code = (e as { code?: string }).code ?? '';
  if (code in INPUT_CODES) return new InputError(field, `cannot ${verb} ${shown(path)}: ${INPUT_CODES[code]} (${code})`);
  const why = (e as Error).message?.split('\n')[0] ?? String(e);
  return new IoError(`cannot ${verb} ${shown(path)}: ${why.slice(0, 300)}`);
}

export interface PathRules {
  /** Relative paths resolve against this folder. */
  baseDir: string;
  /** Relative paths may not leave baseDir (`qgemm run` without --allow-outside). */
  confine: boolean;
}

/** The full path a field names, or an InputError saying why it cannot name one. */
export function resolveField(field: string, p: unknown, rules: PathRules): string {
  if (typeof p !== 'string' || p === '') throw new InputError(field, `expected a file path, got ${brief(p)}`);
  if (p.includes('\0')) throw new InputError(field, 'a path may not contain a NUL character');
  // A spec's lone surrogate becomes U+FFFD when the name is encoded: the file opened or written would be
  // another one. (A command line's bytes that are not UTF-8 are refused where it is read, src/cli/main.ts.)
  if (/\p{Cs}/u.test(p)) {
    throw new InputError(field, `${brief(p)} holds a lone surrogate, which no UTF-8 file name can: it would name another file`);
  }
  if (p.length > MAX_PATH) throw new InputError(field, `path of ${p.length} characters is too long (at most ${MAX_PATH})`);
  if (p.endsWith('/') || p.endsWith('\\')) throw new InputError(field, `${brief(p)} ends with a slash: expected a file, not a folder`);
  if (isAbsolute(p)) return resolve(p);
  const full = resolve(rules.baseDir, p);
  const leaves = (from: string, to: string) => {
    const rel = relative(from, to);
    return rel === '..' || rel.startsWith(`..${'/'}`) || rel.startsWith('..\\') || isAbsolute(rel);
  };
  if (rules.confine && (leaves(rules.baseDir, full) || leaves(realPath(rules.baseDir), realPath(full)))) {
    throw new InputError(field, `${brief(p)} leaves the spec's folder; give an absolute path, or pass --allow-outside`);
  }
  return full;
}

/** The real path of `path` (links resolved); of its nearest existing parent, the rest appended, when it does not exist. */
function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPath(parent), basename(path));
  }
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** A file read as input, remembered so that `out` can be refused when it is the same file. */
export interface ReadRecord {
  field: string;
  dev: number;
  ino: number;
}

/** Reads the CLI's inputs: regular files only, sized before they are read. */
export class InputFiles {
  readonly read: ReadRecord[] = [];
  /** `earlier`: files the command read before (a --tuning table), which an output must not replace either. */
  constructor(
    private readonly budget: MemoryBudget,
    earlier: readonly ReadRecord[] = [],
  ) {
    this.read.push(...earlier);
  }

  /** Opens a regular file without blocking (a FIFO would block open() until a writer comes). */
  private open(field: string, path: string): { fd: number; size: number } {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (e) {
      throw fsError(field, path, 'read', e);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new InputError(field, `${shown(path)} is ${kindOf(st)}; expected a regular file`);
      this.read.push({ field, dev: st.dev, ino: st.ino });
      return { fd, size: st.size };
    } catch (e) {
      closeSync(fd);
      throw fsError(field, path, 'read', e);
    }
  }

  private readAt(field: string, path: string, fd: number, length: number, position: number): Uint8Array {
    const buf = new Uint8Array(length);
    let done = 0;
    try {
      while (done < length) {
        const n = readSync(fd, buf, done, Math.min(length - done, ioChunk), position + done);
        if (n === 0) throw new InputError(field, `${shown(path)} changed while it was read`);
        done += n;
      }
    } catch (e) {
      throw fsError(field, path, 'read', e);
    }
    return buf;
  }

  /** A text file (a spec, a --pipeline @file) of at most maxBytes. */
  readText(field: string, path: string, maxBytes: number): string {
    const { fd, size } = this.open(field, path);
    try {
      if (size > maxBytes) throw new InputError(field, `${shown(path)} is ${size} bytes; at most ${maxBytes} are read`);
      const bytes = this.readAt(field, path, fd, size, 0);
      try {
        return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
      } catch {
        throw new InputError(field, `${shown(path)} is not UTF-8 text`);
      }
    } finally {
      closeSync(fd);
    }
  }

  /** An .npy file: header first, then (size matching, within the memory budget) exactly its data. */
  readNpy(field: string, path: string): NpyArray {
    const { fd, size } = this.open(field, path);
    const bad = (e: unknown) =>
      e instanceof NpyFormatError ? new InputError(field, `${shown(path)} is not a valid .npy file: ${e.message}`) : e;
    try {
      const preamble = this.readAt(field, path, fd, Math.min(size, NPY_PREAMBLE_BYTES), 0);
      let layout: NpyLayout;
      try {
        const headerEnd = npyHeaderEnd(preamble);
        if (headerEnd > MAX_NPY_HEADER) throw new NpyFormatError(`header of ${headerEnd} bytes is over the ${MAX_NPY_HEADER}-byte limit`);
        if (headerEnd > size) throw new NpyFormatError(`header is truncated: needs ${headerEnd} bytes, the file has ${size}`);
        layout = parseNpyLayout(this.readAt(field, path, fd, headerEnd, 0));
        checkNpyDataSize(field, path, layout.dataBytes);
        const actual = size - layout.dataStart;
        if (actual < layout.dataBytes) throw new NpyFormatError(`data is truncated: expected ${layout.dataBytes} bytes, got ${actual}`);
        if (actual > layout.dataBytes)
          throw new NpyFormatError(`${actual - layout.dataBytes} trailing bytes after the data (expected ${layout.dataBytes} bytes)`);
      } catch (e) {
        throw bad(e);
      }
      this.budget.take(field, layout.dataBytes, `${shown(path)} holds ${layout.dataBytes} bytes of data`);
      return npyFromData(layout, this.readAt(field, path, fd, layout.dataBytes, layout.dataStart));
    } finally {
      closeSync(fd);
    }
  }
}

/** Refuses an `out` path that a write must not replace; returns the path. Nothing is written here. */
export function checkOut(field: string, path: string, inputs: InputFiles): string {
  let st: Stats | null = null;
  try {
    st = lstatSync(path);
  } catch (e) {
    if ((e as { code?: string }).code !== 'ENOENT') throw fsError(field, path, 'write', e);
  }
  if (st) {
    if (!st.isFile()) throw new InputError(field, `${shown(path)} is ${kindOf(st)}; only a regular file is replaced`);
    const input = inputs.read.find((r) => r.dev === st.dev && r.ino === st.ino);
    if (input) throw new InputError(field, `${shown(path)} is the same file as ${input.field}; write the result elsewhere`);
    // Like rm's "write-protected" prompt: a file without its owner's write bit is never replaced, even by root.
    if ((st.mode & 0o200) === 0) throw new InputError(field, `${shown(path)} is write-protected; it is not replaced`);
    try {
      accessSync(path, constants.W_OK);
    } catch (e) {
      throw fsError(field, path, 'write', e);
    }
  }
  const dir = dirname(path);
  let dst: Stats;
  try {
    dst = statSync(dir);
  } catch (e) {
    throw fsError(field, dir, 'write into', e);
  }
  if (!dst.isDirectory()) throw new InputError(field, `${shown(dir)} is not a folder`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (e) {
    throw fsError(field, dir, 'write into', e);
  }
  const nameBytes = Buffer.byteLength(basename(path));
  if (nameBytes > 255) throw new InputError(field, `file name of ${nameBytes} bytes is too long (at most 255)`);
  return path;
}

/** The signals that end a command (128 + their number): while a temporary file exists, they wait. */
const DEFERRED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Holds SIGINT, SIGTERM and SIGHUP while a temporary file exists: the write runs on to its rename (or
 * the temporary's removal), then a signal that came meanwhile is raised again with its default action,
 * so that it never leaves a temporary behind and still ends the command as a shell expects. The
 * returned function ends the hold, two turns of the event loop later: a signal that came during the
 * synchronous write is delivered in between.
 */
function holdSignals(): () => void {
  let got: NodeJS.Signals | null = null;
  const hold = (signal: NodeJS.Signals) => {
    got ??= signal;
  };
  for (const signal of DEFERRED) process.on(signal, hold);
  return () => {
    released = new Promise<void>((resolve) =>
      setImmediate(() =>
        setImmediate(() => {
          for (const signal of DEFERRED) process.off(signal, hold);
          if (got) process.kill(process.pid, got);
          resolve();
        }),
      ),
    );
  };
}

/** The end of the last hold (holdSignals), once any signal it held has been raised again. */
let released: Promise<void> = Promise.resolve();

/**
 * Resolves once no signal is held for a write: a command awaits it before its process exits by itself
 * (the quiet child), so that a held signal ends the process as it would have.
 */
export function signalsReleased(): Promise<void> {
  return released;
}

/** The longest start of `name` of at most `max` bytes in UTF-8, whole characters only (file names count bytes). */
function headBytes(name: string, max: number): string {
  let bytes = 0;
  let end = 0;
  for (const c of name) {
    bytes += Buffer.byteLength(c);
    if (bytes > max) break;
    end += c.length;
  }
  return name.slice(0, end);
}

/**
 * Writes `bytes` (or its parts, one after the other) to a new temporary file beside `path` (O_EXCL: never through an existing file or
 * link), then renames it over `path`, after checking `path` once more. A failure removes the temporary;
 * a signal waits for the rename (holdSignals).
 */
export function writeAtomic(field: string, path: string, bytes: ArrayBufferView | readonly ArrayBufferView[], inputs: InputFiles): void {
  checkOut(field, path, inputs);
  let oldMode: number | null = null;
  try {
    oldMode = lstatSync(path).mode & 0o7777;
  } catch {
    // a new file: the umask decides its mode
  }
  const tmp = join(dirname(path), `.${headBytes(basename(path), 200)}.tmp-${process.pid}-${Date.now()}`);
  let fd: number | null = null;
  let made = false;
  const release = holdSignals();
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
    made = true;
    if (oldMode !== null) fchmodSync(fd, oldMode);
    for (const part of ArrayBuffer.isView(bytes) ? [bytes] : bytes) {
      // a byte view per chunk: one of the whole part may be longer than the longest array (2^32 bytes of int32)
      for (let done = 0; done < part.byteLength; ) {
        const chunk = new Uint8Array(part.buffer, part.byteOffset + done, Math.min(part.byteLength - done, ioChunk));
        done += writeSync(fd, chunk);
      }
    }
    closeSync(fd);
    fd = null;
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== null) closeSync(fd);
    if (made) rmSync(tmp, { force: true }); // a temporary that was never made is not looked for
    throw fsError(field, path, 'write', e);
  } finally {
    release();
  }
}
