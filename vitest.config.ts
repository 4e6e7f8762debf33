import { defineConfig } from 'vitest/config';
import projects from './vitest.workspace.js';
import EveryProjectRunsTests from './scripts/every-project-runs-tests.js';

// Packages resolve to their TypeScript sources in tests (the `sessionfold-source` export condition),
// so `npm test` never runs against stale build output.
export default defineConfig({
  resolve: { conditions: ['sessionfold-source'] },
  ssr: { resolve: { conditions: ['sessionfold-source'], externalConditions: ['sessionfold-source'] } },
  test: {
    globalSetup: ['./scripts/build-before-tests.ts'],
    projects,
    reporters: ['default', new EveryProjectRunsTests(projects.map((p) => String(p.test?.name)))],
  },
});
