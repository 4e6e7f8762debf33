import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { foldStream, openSessionHistory, type EventStore, type SessionHistory } from '@sessionfold/core';
import { sessionReducer, sessionStream } from '@sessionfold/core/session';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { STORE_KINDS } from './subjects.js';

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };

/** Settles every call and returns the messages of those that failed. */
async function failures(calls: Promise<unknown>[]): Promise<string[]> {
  return (await Promise.allSettled(calls)).flatMap((result) => (result.status === 'rejected' ? [String((result.reason as Error).message)] : []));
}

/** Asserts the session holds each of the transcript lines and command keys exactly once. */
async function expectEffectsOnce(store: EventStore, id: string, lines: string[], commandKeys: string[]): Promise<void> {
  const { state } = await foldStream(store, sessionStream(id), sessionReducer);
  expect(
    state.log
      .flat()
      .map((entry) => entry.text)
      .sort(),
  ).toEqual([...lines].sort());
  expect(state.commands.map((command) => command.idempotencyId).sort()).toEqual([...commandKeys].sort());
}

/** 100 calls at once on one session: half transcript lines, half enqueues, all distinct. */
function hundredCalls(history: SessionHistory, id: string, tag: string): { calls: Promise<unknown>[]; lines: string[]; commandKeys: string[] } {
  const lines: string[] = [];
  const commandKeys: string[] = [];
  const calls = Array.from({ length: 100 }, (_, index) => {
    if (index % 2 === 0) {
      lines.push(`${tag}-${index}`);
      return history.appendTranscript(id, { role: 'user-message', text: `${tag}-${index}` });
    }
    commandKeys.push(`${tag}-${index}`);
    return history.enqueue(id, { idempotencyId: `${tag}-${index}`, kind: 'message' });
  });
  return { calls, lines, commandKeys };
}

describe.each(STORE_KINDS.map((kind) => [kind.name, kind] as const))('concurrent calls on the %s store', (_name, kind) => {
  it('100 distinct calls at once on one session all succeed, each effect present exactly once', async () => {
    const subject = kind.subject();
    const store = await subject.open();
    try {
      const history = await openSessionHistory({ store });
      const { id } = (await history.start({ idempotencyId: 'busy', ...START })).value;
      const { calls, lines, commandKeys } = hundredCalls(history, id, 'call');
      expect(await failures(calls)).toEqual([]);
      await expectEffectsOnce(store, id, lines, commandKeys);
    } finally {
      await subject.dispose(store);
    }
  });

  it('concurrent calls on one session are stored in call order, each answered with its own result; a refused one fails alone', async () => {
    const subject = kind.subject();
    const store = await subject.open();
    try {
      const history = await openSessionHistory({ store });
      const { id } = (await history.start({ idempotencyId: 'ordered', ...START })).value;
      const calls = Array.from({ length: 60 }, (_, index): Promise<unknown> => {
        if (index === 20) return history.checkpoint(id, { expectedVersion: 7, state: {} });
        if (index === 40) return history.appendTranscript(id, { role: 'user-message', text: 'x'.repeat(2 * 1024 * 1024) });
        return history.appendTranscript(id, { role: 'user-message', text: `line-${index}` });
      });
      const outcomes = await Promise.allSettled(calls);
      const lines = Array.from({ length: 60 }, (_, index) => index).filter((index) => index !== 20 && index !== 40);
      expect(outcomes.flatMap((outcome, index) => (outcome.status === 'rejected' ? [[index, (outcome.reason as { code: string }).code]] : []))).toEqual([
        [20, 'state_conflict'],
        [40, 'invalid_request'],
      ]);
      // Each call got its own entry, numbered in call order.
      expect(lines.map((index) => (outcomes[index] as PromiseFulfilledResult<{ text: string; boxId: number }>).value)).toEqual(
        lines.map((index, position) => expect.objectContaining({ text: `line-${index}`, boxId: position + 1 })),
      );
      const { state } = await foldStream(store, sessionStream(id), sessionReducer);
      expect(state.log.flat().map((entry) => entry.text)).toEqual(lines.map((index) => `line-${index}`));
    } finally {
      await subject.dispose(store);
    }
  });

  it('concurrent starts with one key, from one service and from two, give every caller the same session, one created', async () => {
    const subject = kind.subject();
    const store = await subject.open();
    try {
      const a = await openSessionHistory({ store });
      const b = await openSessionHistory({ store });
      const results = await Promise.all(Array.from({ length: 10 }, (_, index) => (index % 2 === 0 ? a : b).start({ idempotencyId: 'same', ...START })));
      expect(new Set(results.map((result) => result.value.id)).size).toBe(1);
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect((await a.list()).map((record) => record.id)).toEqual([results[0]?.value.id]);
    } finally {
      await subject.dispose(store);
    }
  });
});

/** Runs a worker of `test-workers/` in a child process from source; resolves with its stdout lines. */
function runWorker(name: string, args: readonly string[]): Promise<string[]> {
  const file = fileURLToPath(new URL(`./test-workers/${name}.ts`, import.meta.url));
  const child = spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve(out.split('\n').filter((line) => line.length > 0)) : reject(new Error(`worker exited with ${code ?? signal}: ${err}`)),
    );
  });
}

describe('two processes on one SQLite file', () => {
  it('each start the same key and make 50 calls at once on that session: one session, one creator, no failure, every effect once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-cross-processes-'));
    try {
      const path = join(dir, 'store.db');
      await (await sqliteStore({ path })).close();
      const barrier = join(dir, 'barrier');
      await mkdir(barrier);
      const workers = ['w0', 'w1'];
      const outputs = await Promise.all(workers.map((worker) => runWorker('service-calls', [path, worker, barrier, String(workers.length), '50'])));
      const reports = outputs.flat().map((line) => JSON.parse(line) as { worker: string; id: string; created: boolean; failures: string[] });

      expect(reports.map((report) => report.failures)).toEqual([[], []]);
      expect(new Set(reports.map((report) => report.id)).size).toBe(1);
      expect(reports.filter((report) => report.created)).toHaveLength(1);
      const store = await sqliteStore({ path });
      try {
        const lines = workers.flatMap((worker) => Array.from({ length: 25 }, (_, index) => `${worker}-${index * 2}`));
        const commandKeys = workers.flatMap((worker) => Array.from({ length: 25 }, (_, index) => `${worker}-${index * 2 + 1}`));
        await expectEffectsOnce(store, reports[0]?.id as string, lines, commandKeys);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a file store written by release 0.1.0', () => {
  // The ids release 0.1.0 derived from the start keys `fixture-1` and `fixture-3` alone (the key's name-based UUID;
  // the fixture's session streams are named by them).
  const liveId = 'c31ff539-8ac9-5d0f-98a6-ef62a65d8a1b';
  const completedId = 'bfd51d4c-2e5e-583d-a170-dba55b5fe4db';

  it('a start with the key of a live session returns it; with the key of a completed one, creates a session under a new id', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-cross-fixture-'));
    const fixture = fileURLToPath(new URL('../../store-file/src/fixtures/release-0.1.0', import.meta.url));
    await cp(fixture, join(dir, 'store'), { recursive: true });
    const store = await fileStore({ directory: join(dir, 'store') });
    try {
      const history = await openSessionHistory({ store });
      const live = await history.start({ idempotencyId: 'fixture-1', ...START });
      expect(live).toMatchObject({ created: false, value: { id: liveId, phase: 'active' } });

      const next = await history.start({ idempotencyId: 'fixture-3', ...START });
      expect(next.created).toBe(true);
      expect(next.value.id).not.toBe(completedId);
      expect((await history.get('archive-3')).state.sessionId).toBe(completedId);
      expect(await history.start({ idempotencyId: 'fixture-3', ...START })).toMatchObject({ created: false, value: { id: next.value.id } });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
