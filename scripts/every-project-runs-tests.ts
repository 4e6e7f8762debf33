import type { Reporter, TestModule } from 'vitest/node';
import { POSTGRES_TAG, postgresSkipLine, postgresTestsSkipped } from './postgres-tests.js';

/**
 * Fails the run when a declared test project collected no tests (a silently empty project proves nothing),
 * and ends the output with one plain `tests: N passed, N failed, N skipped` line, after one line saying how many
 * PostgreSQL tests were skipped and why, when they were.
 */
export default class EveryProjectRunsTests implements Reporter {
  readonly #declared: string[];
  constructor(declared: string[]) {
    this.#declared = declared;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counted = new Map<string, number>();
    const states = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    let postgresSkipped = 0;
    for (const module of testModules) {
      const name = module.project.name;
      const tests = [...module.children.allTests()];
      counted.set(name, (counted.get(name) ?? 0) + tests.length);
      for (const test of tests) {
        const { state } = test.result();
        states[state]++;
        if (state === 'skipped' && test.tags.includes(POSTGRES_TAG)) postgresSkipped++;
      }
    }
    // A filtered run (a file or `--project` on the command line) only checks the projects it touched.
    const filtered = process.argv.slice(2).some((arg) => !arg.startsWith('-') && arg !== 'run');
    const expected = filtered ? [...counted.keys()] : this.#declared;
    const empty = expected.filter((name) => (counted.get(name) ?? 0) === 0 && !process.argv.some((a) => a.startsWith('--project')));
    if (empty.length > 0) {
      console.error(`\nThese test projects collected no tests: ${empty.join(', ')}`);
      process.exitCode = 1;
    }
    if (postgresSkipped > 0 && postgresTestsSkipped()) console.log(`\n${postgresSkipLine(postgresSkipped)}`);
    console.log(`\ntests: ${states.passed} passed, ${states.failed} failed, ${states.skipped + states.pending} skipped`);
  }
}
