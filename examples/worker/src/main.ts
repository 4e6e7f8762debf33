import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema, freshSchema, type Backend } from './backend.js';
import { passed, report } from './checks.js';
import { runFleet } from './fleet.js';

// Runs the fleet over a fresh SQLite file, then over a fresh PostgreSQL schema when SESSIONFOLD_PG_URL is set;
// both are removed afterwards. The journal of each run is printed only when a check fails.
const url = process.env.SESSIONFOLD_PG_URL;
let ok = true;
for (const kind of url ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-worker-'));
  const backend: Backend = kind === 'sqlite' ? { kind, path: join(dir, 'sessions.db') } : { kind, url: url as string, schema: freshSchema() };
  console.log(`${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}:`);
  try {
    const run = await runFleet(backend, dir);
    for (const line of report(run)) console.log(`  ${line}`);
    if (!passed(run)) {
      ok = false;
      console.log(run.journal);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (backend.kind === 'postgres') await dropSchema(backend.url, backend.schema);
  }
}
process.exitCode = ok ? 0 : 1;
