// `qgemm verify`: runs verifyDevice() (src/verify.ts) on the WebGPU adapter (default) or the CPU and
// prints its table (kernel | configuration | problems | mismatches | time) or, with --json, the report
// as JSON on stdout. Any mismatch makes the command fail with exit code 1 (a VerifyMismatchError after
// the report), so a script or a device run can stop before trusting a kernel on an unknown driver.

import { VerifyMismatchError, type VerifyOptions, formatVerifyReport, verifyDevice } from '../verify.ts';

export async function cmdVerify(
  o: { backend: string; json?: boolean; kernel?: string[] },
  io: { out(t: string): void; err(t: string): void },
  /** Test hook: a device and extra kernels. */
  hook: Pick<VerifyOptions, 'device' | 'extraKernels'> = {},
): Promise<void> {
  const report = await verifyDevice({
    ...hook,
    backend: o.backend as 'webgpu' | 'cpu',
    kernels: o.kernel,
  });
  io.out(o.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatVerifyReport(report)}\n`);
  if (!report.ok) {
    const bad = report.rows.filter((r) => r.mismatches > 0).map((r) => r.kernel);
    throw new VerifyMismatchError(`${bad.length} kernel(s) differ from the reference: ${bad.join(', ')}`);
  }
}
