import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  copyStore,
  openSessionHistory,
  type EventStore,
  type SessionHistory,
  type SessionHistoryObserver,
  type SessionHistoryOptions,
} from '@sessionfold/core';
import type { CheckpointSlot } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { propertyParameters } from './calls.fixture.js';
import { equivalenceProperty } from './equivalence.fixture.js';
import { observe } from './observe.js';
import { steppingClock } from './runner.js';
import { memoryKind, sqliteKind, STORE_KINDS } from './subjects.js';

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };
const CHECKPOINT_NAME = 'session-projection';

type Calls = [string, Record<string, unknown>][];

/** A service on `store` whose observer records every hook call. */
async function openObserved(store: EventStore, options: Partial<SessionHistoryOptions> = {}): Promise<{ history: SessionHistory; calls: Calls }> {
  const calls: Calls = [];
  const hook = (name: string) => (value: object) => void calls.push([name, value as Record<string, unknown>]);
  const observer: SessionHistoryObserver = {
    projectionCaughtUp: hook('projectionCaughtUp'),
    checkpointLoaded: hook('checkpointLoaded'),
    checkpointIgnored: hook('checkpointIgnored'),
    checkpointSaved: hook('checkpointSaved'),
    followFailed: hook('followFailed'),
  };
  return { history: await openSessionHistory({ store, clock: steppingClock(), compaction: false, observer, ...options }), calls };
}

/** The store's checkpoint slot: every store this project ships has one. */
function slotOf(store: EventStore): CheckpointSlot {
  if (store.checkpoints === undefined) return expect.fail('the store has no checkpoint slot');
  return store.checkpoints;
}

const of = (calls: Calls, hook: string) => calls.filter(([name]) => name === hook).map(([, value]) => value);
const changesApplied = (calls: Calls) => of(calls, 'projectionCaughtUp').reduce((sum, caughtUp) => sum + (caughtUp.changes as number), 0);

/** Sessions with open, claimed and completed commands, some stopped. */
async function fill(history: SessionHistory, tag: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const { value } = await history.start({ idempotencyId: `${tag}-${index}`, ...START });
    const command = await history.enqueue(value.id, { idempotencyId: `${tag}-${index}-a`, kind: 'message' });
    await history.enqueue(value.id, { idempotencyId: `${tag}-${index}-b`, kind: 'message' });
    if (index % 2 === 1) await history.claimCommand(command.value.id, { worker: 'worker', leaseMs: 3_600_000 });
    if (index % 3 === 2) await history.stop(value.id);
  }
}

/** What the service answers from its projection, and what its idempotent calls answer (ids and `created` only). */
async function answers(history: SessionHistory) {
  const list = await history.list();
  const heads = await history.commandHeads();
  const gets = await Promise.all(list.map((record) => observe(() => history.get(record.id))));
  const starts = [];
  for (const record of list) {
    // The summaries leave the start key out; the full record has it.
    const key = record.phase === 'complete' ? undefined : (await history.get(record.id)).state['startIdempotencyId'];
    if (typeof key === 'string')
      starts.push(await observe(async () => (({ value, created }) => [value.id, created])(await history.start({ idempotencyId: key, ...START }))));
  }
  const repeats = [];
  for (const head of heads) {
    repeats.push(await observe(async () => (await history.enqueue(head.sessionId, { idempotencyId: head.idempotencyId, kind: 'message' })).created));
    if (head.worker !== undefined) repeats.push(await observe(async () => (await history.claimCommand(head.id, { worker: 'intruder', leaseMs: 1000 })).id));
  }
  return { list, heads, gets, starts, repeats };
}

/** The projection's answers of a service started from the checkpoint and of one built from the whole feed. */
async function compareWithRebuilt(store: EventStore): Promise<{ loaded: Calls; fromCheckpoint: unknown; fromFeed: unknown }> {
  const checkpointed = await openObserved(store);
  const rebuilt = await openObserved(store, { checkpoints: false });
  try {
    // Reads first, then the idempotent calls, one service after the other.
    const reads = [await checkpointed.history.list(), await rebuilt.history.list()];
    expect(reads[0]).toEqual(reads[1]);
    return { loaded: checkpointed.calls, fromCheckpoint: await answers(checkpointed.history), fromFeed: await answers(rebuilt.history) };
  } finally {
    await checkpointed.history.close();
    await rebuilt.history.close();
  }
}

async function feedPositions(store: EventStore): Promise<number[]> {
  const positions: number[] = [];
  for await (const record of store.readAll()) positions.push(record.position);
  return positions;
}

const DURABLE_KINDS = STORE_KINDS.filter((kind) => kind.subject().durable);

describe.each(DURABLE_KINDS.map((kind) => [kind.name, kind] as const))('projection checkpoints on the %s store', (_name, kind) => {
  it('a service reopened on the store reads only the feed written after the checkpoint, and answers as one rebuilt from the feed', async () => {
    const subject = kind.subject();
    let store = await subject.open();
    try {
      const first = await openObserved(store);
      await fill(first.history, 'early', 6);
      await first.history.list();
      await first.history.close();
      const saved = of(first.calls, 'checkpointSaved').at(-1);
      expect(saved).toMatchObject({ sessions: 6 });
      expect(saved).not.toHaveProperty('error');

      // Another store object, after the checkpoint, writes more.
      store = await subject.reopen(store);
      const writer = await openObserved(store, { checkpoints: false });
      await fill(writer.history, 'late', 3);
      await writer.history.close();
      store = await subject.reopen(store);

      const after = (await feedPositions(store)).filter((position) => position > (saved?.position as number)).length;
      const { loaded, fromCheckpoint, fromFeed } = await compareWithRebuilt(store);
      expect(of(loaded, 'checkpointLoaded')).toEqual([expect.objectContaining({ position: saved?.position, sessions: 6 })]);
      // The open's catch-up read what came after the checkpoint, and nothing before it.
      expect(of(loaded, 'projectionCaughtUp')[0]).toMatchObject({ changes: after, source: 'catch-up' });
      expect(fromCheckpoint).toEqual(fromFeed);
    } finally {
      await subject.dispose(store);
    }
  });

  it('a checkpoint carried into a copy of the store is ignored there and the projection rebuilt', async () => {
    const subject = kind.subject();
    const copySubject = kind.subject();
    const store = await subject.open();
    const copy = await copySubject.open();
    try {
      const { history } = await openObserved(store);
      await fill(history, 'copied', 4);
      await history.list();
      await history.close();
      await copyStore(store, copy);
      const text = await slotOf(store).load(CHECKPOINT_NAME);
      expect(text).toBeDefined();
      await slotOf(copy).save(CHECKPOINT_NAME, text as Uint8Array);

      const { loaded, fromCheckpoint, fromFeed } = await compareWithRebuilt(copy);
      expect(of(loaded, 'checkpointIgnored')).toEqual([expect.objectContaining({ reason: 'store' })]);
      expect(of(loaded, 'checkpointLoaded')).toEqual([]);
      expect(fromCheckpoint).toEqual(fromFeed);
    } finally {
      await subject.dispose(store);
      await copySubject.dispose(copy);
    }
  });
});

describe('a checkpoint damaged on disk', () => {
  it('in a file store is ignored (the slot refuses it) and the projection rebuilt with the same answers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-cross-checkpoint-damage-'));
    const openStore = () => fileStore({ directory: join(dir, 'store') });
    try {
      const store = await openStore();
      const { history } = await openObserved(store);
      await fill(history, 'damaged', 4);
      await history.list();
      await history.close();
      await store.close();
      const path = join(dir, 'store', 'checkpoints', CHECKPOINT_NAME);
      const bytes = await readFile(path);
      // A byte of the body (after the header line) changed, as a bad sector or a stray write would.
      const at = bytes.indexOf(0x0a) + 200;
      bytes[at] = (bytes[at] as number) ^ 0x01;
      await writeFile(path, bytes);
      const reopened = await openStore();
      try {
        const { loaded, fromCheckpoint, fromFeed } = await compareWithRebuilt(reopened);
        expect(of(loaded, 'checkpointIgnored')).toEqual([expect.objectContaining({ reason: 'unreadable' })]);
        expect(of(loaded, 'checkpointLoaded')).toEqual([]);
        expect(fromCheckpoint).toEqual(fromFeed);
      } finally {
        await reopened.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('projection checkpoints and crashes', () => {
  it.each(['file', 'sqlite'])('a %s writer killed between two checkpoint saves loses nothing: the next open catches up from the last one', async (kind) => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-cross-checkpoint-crash-'));
    try {
      const started = await runUntilKilled('checkpointed-writer', [kind, dir], 25);
      const store = kind === 'file' ? await fileStore({ directory: join(dir, 'store') }) : await sqliteStore({ path: join(dir, 'store.db') });
      try {
        const { loaded, fromCheckpoint, fromFeed } = await compareWithRebuilt(store);
        const checkpoint = of(loaded, 'checkpointLoaded')[0];
        expect(checkpoint).toBeDefined();
        // The writer had acknowledged more than its last checkpoint held, and every acknowledged session is there.
        expect(checkpoint?.sessions as number).toBeLessThanOrEqual(started);
        expect(changesApplied(loaded)).toBeGreaterThan(0);
        const { starts } = fromCheckpoint as { starts: { ok: [string, boolean] }[] };
        // Every session the writer had started is found again (not created) by its start key.
        expect(starts.length).toBeGreaterThanOrEqual(started);
        expect(starts.every((start) => start.ok[1] === false)).toBe(true);
        expect(fromCheckpoint).toEqual(fromFeed);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the projection follows the store', () => {
  it('a session started through another SQLite store object reaches the projection without a call, and close ends the follow', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sessionfold-cross-follow-'));
    const path = join(dir, 'store.db');
    const watched = await sqliteStore({ path });
    const other = await sqliteStore({ path });
    try {
      const watcher = await openObserved(watched);
      const writer = await openSessionHistory({ store: other, checkpoints: false, follow: false });
      await writer.start({ idempotencyId: 'seen-without-a-call', ...START });
      const end = (await feedPositions(other)).at(-1) as number;
      await until(() => of(watcher.calls, 'projectionCaughtUp').some((caughtUp) => caughtUp.source === 'follow' && (caughtUp.position as number) >= end));
      expect(of(watcher.calls, 'projectionCaughtUp').filter((caughtUp) => caughtUp.source === 'catch-up')).toEqual([]);
      expect((await watcher.history.list()).map((record) => record.id)).toEqual([
        (await writer.start({ idempotencyId: 'seen-without-a-call', ...START })).value.id,
      ]);

      await watcher.history.close();
      const heard = watcher.calls.length;
      await writer.start({ idempotencyId: 'after-close', ...START });
      // Several of the SQLite store's follow polls (50 ms): a loop still running would have applied the start.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(watcher.calls.length).toBe(heard);
      await writer.close();
    } finally {
      await watched.close();
      await other.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('checkpoints saved and reloaded at random steps', () => {
  it('a service saving after every change and reopened at random steps answers every call as one that never saves', async () => {
    await fc.assert(
      equivalenceProperty([sqliteKind, sqliteKind, memoryKind], 30, [
        { checkpoints: false, follow: false },
        { checkpoints: { everyChanges: 1 } },
        { checkpoints: { everyChanges: 1 } },
      ]),
      propertyParameters(15),
    );
  });
});

/** Resolves once `condition` holds, looking every 10 ms; fails after 10 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Runs a worker of `test-workers/` from source and kills it (SIGKILL) once it has printed `count` (a number
 * per line); resolves with the last number it printed before dying.
 */
function runUntilKilled(name: string, args: readonly string[], count: number): Promise<number> {
  const file = fileURLToPath(new URL(`./test-workers/${name}.ts`, import.meta.url));
  const child = spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (out.split('\n').some((line) => Number(line) >= count)) child.kill('SIGKILL');
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      const printed = out
        .split('\n')
        .filter((line) => line.length > 0)
        .map(Number);
      if (signal === 'SIGKILL' && printed.length > 0) resolve(Math.max(...printed));
      else reject(new Error(`worker ended without being killed (${signal ?? 'exit'}): ${err}`));
    });
  });
}
