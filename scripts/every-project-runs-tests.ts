import type { Reporter, TestModule } from 'vitest/node';

/**
 * Fails the run when a declared test project collected no tests (a silently empty project proves nothing),
 * and ends the output with one plain `tests: N passed, N failed, N skipped` line.
 */
export default class EveryProjectRunsTests implements Reporter {
  readonly #declared: string[];
  constructor(declared: string[]) {
    this.#declared = declared;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counted = new Map<string, number>();
    const states = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    for (const module of testModules) {
      const name = module.project.name;
      const tests = [...module.children.allTests()];
      counted.set(name, (counted.get(name) ?? 0) + tests.length);
      for (const test of tests) states[test.result().state]++;
    }
    // A filtered run (a file or `--project` on the command line) only checks the projects it touched.
    const filtered = process.argv.slice(2).some((arg) => !arg.startsWith('-') && arg !== 'run');
    const expected = filtered ? [...counted.keys()] : this.#declared;
    const empty = expected.filter((name) => (counted.get(name) ?? 0) === 0 && !process.argv.some((a) => a.startsWith('--project')));
    if (empty.length > 0) {
      console.error(`\nThese test projects collected no tests: ${empty.join(', ')}`);
      process.exitCode = 1;
    }
    console.log(`\ntests: ${states.passed} passed, ${states.failed} failed, ${states.skipped + states.pending} skipped`);
  }
}
