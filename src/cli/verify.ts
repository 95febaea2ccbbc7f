// `qgemm verify`: runs verifyDevice() (src/verify.ts) on the WebGPU adapter (default) or the CPU. While
// it runs it prints progress on stderr: a header naming the adapter (or CPU), then one line per kernel as
// each is done. At the end it prints its table (kernel | configuration | problems | mismatches | time) or,
// with --json, the report as JSON: the only thing on stdout. A mismatch, or a kernel asked for with
// --kernel that cannot run here, makes the command fail with exit code 1 (a VerifyMismatchError or a
// VerifyIncompleteError after the report), so a script or a device run can stop before trusting a
// kernel on an unknown driver.

import { InputError, QgemmError } from '../errors.ts';
import { VerifyMismatchError, type VerifyOptions, formatVerifyReport, formatVerifyRow, verifyDevice, verifyVerdict } from '../verify.ts';

/** A kernel asked for with --kernel could not run on this backend, adapter or CPU (exit code 1). */
export class VerifyIncompleteError extends QgemmError {
  override name = 'VerifyIncompleteError';
}

export async function cmdVerify(
  o: { backend: string; json?: boolean; kernel?: string[] },
  io: { out(t: string): void; err(t: string): void },
  /** Test hook: a device and extra kernels. */
  hook: Pick<VerifyOptions, 'device' | 'extraKernels'> = {},
): Promise<void> {
  let report: Awaited<ReturnType<typeof verifyDevice>>;
  try {
    report = await verifyDevice({
      ...hook,
      backend: o.backend as 'webgpu' | 'cpu',
      kernels: o.kernel,
      onStart: ({ backend, device }) => io.err(`qgemm verify: ${backend} on ${device}\n`),
      onRow: (row) => io.err(`  ${formatVerifyRow(row)}\n`),
    });
  } catch (e) {
    // The library names its options (kernels[0], backend); here they are flags.
    if (e instanceof InputError && /^(kernels|backend)\b/.test(e.field)) {
      const flag = e.field.startsWith('kernels') ? '--kernel' : '--backend';
      throw new InputError(flag, e.message.slice(e.field.length + 2));
    }
    throw e;
  }
  io.out(o.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatVerifyReport(report)}\n`);
  if (!report.ok) {
    const differ = report.rows.some((r) => r.mismatches > 0);
    throw new (differ ? VerifyMismatchError : VerifyIncompleteError)(verifyVerdict(report).replace(/^[A-Z ]+: /, ''));
  }
}
