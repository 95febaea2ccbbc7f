// Typed errors for every stage of pack -> gemm -> output. Bad input names the field it is about;
// GPU trouble (no adapter, validation, out-of-memory, device loss, limits) has its own class, so that
// callers and the CLI can tell "your input is wrong" (CLI exit code 2) from "the machine failed" (exit 1).

/** Base class of every error this library throws on purpose. */
export class QgemmError extends Error {
  override name = 'QgemmError';
}

/** Bad input: `field` names the offending field, e.g. `pipeline[2].shift` or `lhs`. */
export class InputError extends QgemmError {
  override name = 'InputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** No WebGPU adapter (or device) could be had where one was required. */
export class NoAdapterError extends QgemmError {
  override name = 'NoAdapterError';
}

/** A GPU validation error caught by an error scope: a bug or an unsupported adapter, never silent. */
export class GpuValidationError extends QgemmError {
  override name = 'GpuValidationError';
}

/** The GPU ran out of memory for this problem. */
export class GpuOutOfMemoryError extends QgemmError {
  override name = 'GpuOutOfMemoryError';
}

/** The device was lost (driver reset, destroy(), tab backgrounded...). The next call re-acquires one. */
export class DeviceLostError extends QgemmError {
  override name = 'DeviceLostError';
  constructor(
    message: string,
    readonly reason: string = 'unknown',
  ) {
    super(message);
  }

  /**
   * The error of a context whose device is gone, worded once for every op (GEMM, elementwise, layers):
   * `reason` is the context's lostReason ('destroyed' after its destroy(), else the device's `reason:
   * message`); `during`, what failed because of it, and `cause`, how (its message, where it has one).
   */
  static of(reason: string, during?: string, cause?: unknown): DeviceLostError {
    const what = reason === 'destroyed' ? 'this GpuContext was destroyed' : `the GPU device was lost (${reason})`;
    const said = cause instanceof Error ? cause.message : cause === undefined ? '' : String(cause);
    return new DeviceLostError(`${what}${during === undefined ? '' : ` during ${during}`}${said ? `: ${said}` : ''}`, reason);
  }
}

/** A problem exceeds a device limit that the scheduler cannot split around. */
export class LimitExceededError extends QgemmError {
  override name = 'LimitExceededError';
  constructor(
    readonly limit: string,
    message: string,
  ) {
    super(message);
  }
}

/** A worker thread of the CPU path stopped (it exited or was terminated); the next call starts new workers. */
export class WorkerLostError extends QgemmError {
  override name = 'WorkerLostError';
}
