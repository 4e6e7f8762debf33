import type { Reporter, TestModule } from 'vitest/node';

/** Fails the run when a declared test project collected no tests (a silently empty project proves nothing). */
export default class EveryProjectRunsTests implements Reporter {
  readonly #declared: string[];
  constructor(declared: string[]) {
    this.#declared = declared;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counted = new Map<string, number>();
    for (const module of testModules) {
      const name = module.project.name;
      counted.set(name, (counted.get(name) ?? 0) + [...module.children.allTests()].length);
    }
    // A filtered run (a file or `--project` on the command line) only checks the projects it touched.
    const filtered = process.argv.slice(2).some((arg) => !arg.startsWith('-') && arg !== 'run');
    const expected = filtered ? [...counted.keys()] : this.#declared;
    const empty = expected.filter((name) => (counted.get(name) ?? 0) === 0 && !process.argv.some((a) => a.startsWith('--project')));
    if (empty.length > 0) {
      console.error(`\nThese test projects collected no tests: ${empty.join(', ')}`);
      process.exitCode = 1;
    }
  }
}
