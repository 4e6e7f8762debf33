import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSessionHistory, type SessionHistory, StoreClosedError } from '@sessionfold/core';
import { afterEach, describe, expect, it } from 'vitest';
import { OWNED_STORE_KINDS, openOwnedStore, type OwnedStoreKind } from './owned-stores.fixture.js';
import { dropPostgresSchema } from './postgres-subject.js';

/** After its session started, the worker has this long to exit: ample for a process with nothing left to do. */
const EXIT_WITHIN_MS = 10_000;
/** The PostgreSQL store's tests need the server named by SESSIONFOLD_PG_URL: they carry the `postgres` tag. */
const tagsOf = (kind: OwnedStoreKind): string[] => (kind === 'postgres' ? ['postgres'] : []);

/** A fresh place for a store of `kind`: a directory, and for PostgreSQL a schema; both removed after the test. */
const places: Array<{ dir: string; schema: string }> = [];
function placeFor(kind: OwnedStoreKind): string {
  const place = { dir: mkdtempSync(join(tmpdir(), 'sessionfold-exit-')), schema: `sf_exit_${randomUUID().replaceAll('-', '').slice(0, 12)}` };
  places.push(place);
  return kind === 'postgres' ? place.schema : place.dir;
}
afterEach(async () => {
  for (const place of places.splice(0)) {
    rmSync(place.dir, { recursive: true, force: true });
    await dropPostgresSchema(place.schema);
  }
});

const runs = OWNED_STORE_KINDS.flatMap((kind) => [
  { kind, view: false },
  // A read-only view follows its writer from a store object of its own; memory has no second view of one store.
  ...(kind === 'memory' ? [] : [{ kind, view: true }]),
]);

describe('a script that throws before closing the store and the service', () => {
  for (const { kind, view } of runs) {
    const name = `exits by itself with the error on the ${kind} store${view ? ', with a read-only view following it' : ''}`;
    it(name, { tags: tagsOf(kind), timeout: 60_000 }, async () => {
      const ended = await runWorker([kind, placeFor(kind), ...(view ? ['view'] : [])]);
      expect(ended.stdout).toBe('started\n');
      expect(ended.stderr).toContain('main failed before close');
      expect(ended).toMatchObject({ exited: true, code: 1 });
    });
  }
});

describe('await using', () => {
  for (const kind of OWNED_STORE_KINDS) {
    it(`closes the service and then the ${kind} store at the end of the scope`, { tags: tagsOf(kind) }, async () => {
      const where = placeFor(kind);
      let left: { store: Awaited<ReturnType<typeof openOwnedStore>>; history: SessionHistory } | undefined;
      {
        await using store = await openOwnedStore(kind, where);
        await using history = await openSessionHistory({ store });
        await history.start({ idempotencyId: 'scoped', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
        left = { store, history };
      }
      await expect(left.history.list()).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('closed') });
      await expect(left.store.read('anything')).rejects.toBeInstanceOf(StoreClosedError);
    });
  }
});

/** Runs the worker from source; kills it if it has not exited `EXIT_WITHIN_MS` after it started its session. */
function runWorker(args: readonly string[]): Promise<{ exited: boolean; code: number | null; stdout: string; stderr: string }> {
  const file = fileURLToPath(new URL('./test-workers/throws-without-close.ts', import.meta.url));
  const child = spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let killed = false;
  let timer: NodeJS.Timeout | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    timer ??= setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, EXIT_WITHIN_MS);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ exited: !killed, code, stdout, stderr });
    });
  });
}
