import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from '@fast-check/vitest';
import { afterAll, beforeAll, expect } from 'vitest';
import { loadSnapshot, saveSnapshot } from './snapshot-file.js';
import { startPythonDumps, type PythonDumps } from './python-dumps.fixture.js';
import { snapshotArbitrary } from './snapshots.fixture.js';
import { propertyRuns } from './property-runs.fixture.js';

let dir: string;
let python: PythonDumps;
let file = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfile-property-'));
  python = startPythonDumps();
});
afterAll(async () => {
  await python.close();
  await rm(dir, { recursive: true, force: true });
});

test.prop([snapshotArbitrary], { numRuns: propertyRuns(60) })(
  'any valid snapshot loads back equal, from bytes identical to what python3 writes',
  async (snapshot) => {
    const path = join(dir, `run-${++file}.json`);
    await saveSnapshot(path, snapshot);
    expect(await loadSnapshot(path)).toEqual(snapshot);
    const bytes = await readFile(path, 'utf8');
    expect(bytes).toBe(await python.dumps({ version: 2, ...snapshot }));
  },
);

test.prop([snapshotArbitrary], { numRuns: propertyRuns(30) })('saving a loaded snapshot again writes the same bytes', async (snapshot) => {
  const path = join(dir, `again-${++file}.json`);
  await saveSnapshot(path, snapshot);
  const first = await readFile(path, 'utf8');
  await saveSnapshot(path, (await loadSnapshot(path))!);
  expect(await readFile(path, 'utf8')).toBe(first);
});
