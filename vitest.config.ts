import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import projects from './vitest.workspace.js';
import EveryProjectRunsTests from './scripts/every-project-runs-tests.js';
import { postgresTag } from './scripts/postgres-tests.js';

// Packages resolve to their TypeScript sources in tests (the `sessionfold-source` export condition),
// so `npm test` never runs against stale build output.
export default defineConfig({
  resolve: { conditions: ['sessionfold-source'] },
  ssr: { resolve: { conditions: ['sessionfold-source'], externalConditions: ['sessionfold-source'] } },
  test: {
    // Absolute: a relative path would be resolved against each project's root. Every project inherits it; it builds once per run.
    globalSetup: [fileURLToPath(new URL('./scripts/build-before-tests.ts', import.meta.url))],
    projects,
    // Tests tagged `postgres` run against SESSIONFOLD_PG_URL; without it they are skipped, except under CI=true,
    // where the run fails here (scripts/postgres-tests.ts).
    tags: [postgresTag()],
    reporters: ['default', new EveryProjectRunsTests(projects.map((p) => String(p.test?.name)))],
  },
});
