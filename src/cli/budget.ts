// The CLI's memory cap (README "The CLI"): the operands it reads, and its estimate of the output and
// working memory of the op, must fit under --max-memory (default DEFAULT_MAX_MEMORY). Over the cap is
// exit 2 with the size in the message, before anything large is allocated, instead of "Array buffer
// allocation failed" half way through. The estimates are upper bounds of what the CPU path holds at
// once; the WebGPU path holds less on the host.

import { InputError } from '../errors.ts';

export const DEFAULT_MAX_MEMORY = 4 * 2 ** 30;

const UNITS: Record<string, number> = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** "512M", "8G", "1.5G", "1000000" (bytes) -> bytes. */
export function parseSize(field: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i.exec(text.trim());
  const bytes = m ? Math.floor(Number(m[1]) * UNITS[m[2].toUpperCase()]) : NaN;
  if (m && bytes > Number.MAX_SAFE_INTEGER) {
    throw new InputError(field, `${JSON.stringify(text.slice(0, 100))} is too large: at most ${formatBytes(Number.MAX_SAFE_INTEGER)}`);
  }
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InputError(field, `expected a size such as 512M, 8G or a number of bytes, got ${JSON.stringify(text.slice(0, 100))}`);
  }
  return bytes;
}

export function formatBytes(n: number): string {
  if (n < 2 ** 10) return `${n} bytes`;
  const [unit, size] = n < 2 ** 20 ? ['KiB', 2 ** 10] : n < 2 ** 30 ? ['MiB', 2 ** 20] : n < 2 ** 40 ? ['GiB', 2 ** 30] : ['TiB', 2 ** 40];
  return `${(n / size).toFixed(1)} ${unit}`;
}

export class MemoryBudget {
  private used = 0;
  constructor(readonly maxBytes: number = DEFAULT_MAX_MEMORY) {}

  /** Counts `bytes` against the cap, or throws an InputError on `field` explaining `what`. */
  take(field: string, bytes: number, what: string): void {
    if (this.used + bytes > this.maxBytes) {
      throw new InputError(
        field,
        `${what}: ${formatBytes(this.used + bytes)} in all, over the ${formatBytes(this.maxBytes)} memory cap (raise it with --max-memory)`,
      );
    }
    this.used += bytes;
  }
}

/**
 * Output + working memory of a GEMM on the CPU path: the int32 accumulators, the output, its .npy copy,
 * and the packed operands with their sums.
 */
export function gemmWorkingBytes(M: number, N: number, K: number, outBytes: number): number {
  return M * N * (4 + 2 * outBytes) + (M + N) * K + 8 * (M + N);
}

/** Output + working memory of an elementwise op: int32 intermediates, the output and its .npy copy. */
export function elementwiseWorkingBytes(count: number): number {
  return count * (4 + 2);
}
