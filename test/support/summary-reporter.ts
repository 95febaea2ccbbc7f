// A vitest reporter that ends every run with one plain line, alone on its line and without colors:
//   N passed, N failed, N skipped
// CI tooling reads that line. It counts test cases (not files), over every module of the run:
// - passed / failed / skipped: TestCase.result().state (skip, todo and filtered-out tests are skipped);
// - a test still 'pending' at the end (an interrupted run) did not pass: it counts as failed;
// - a module that failed without any failed test (an import or collection error, a failing
//   beforeAll/afterAll hook) counts as one failed, and so does each unhandled error, so that a broken
//   run can never print "0 failed".
// Use it next to the default reporter: reporters: ['default', './test/support/summary-reporter.ts'].

import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';

export interface SummaryCounts {
  passed: number;
  failed: number;
  skipped: number;
}

export function countResults(testModules: ReadonlyArray<TestModule>, unhandledErrors: number): SummaryCounts {
  const counts: SummaryCounts = { passed: 0, failed: 0, skipped: 0 };
  for (const module of testModules) {
    let failedHere = 0;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === 'passed') counts.passed++;
      else if (state === 'skipped') counts.skipped++;
      else failedHere++; // 'failed', or 'pending' (never finished)
    }
    if (failedHere === 0 && module.state() === 'failed') failedHere = 1;
    counts.failed += failedHere;
  }
  counts.failed += unhandledErrors;
  return counts;
}

export function summaryLine(c: SummaryCounts): string {
  return `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`;
}

export default class SummaryReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>, _reason: TestRunEndReason): void {
    const line = summaryLine(countResults(testModules, unhandledErrors.length));
    // Through vitest's logger when there is one, so that it lands after the default reporter's summary
    // on the same stream; the leading newline keeps it alone on its line whatever was printed before.
    if (this.vitest) this.vitest.logger.log(`\n${line}`);
    else process.stdout.write(`\n${line}\n`);
  }
}
