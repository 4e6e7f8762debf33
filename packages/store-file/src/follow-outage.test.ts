import { describe, expect, it } from 'vitest';
import type { FeedRecord, RecordedEvent, StoreObserver } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore, type FileEventStore } from './index.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
import { freshDir, randomStream, segmentsOf } from './test-support.fixture.js';

type Interrupted = Parameters<Required<StoreObserver>['followInterrupted']>[0];

/** Follows `view` in the background: what it saw, how it ended, a way to wait for a condition, and a stop. */
function following(view: FileEventStore) {
  const controller = new AbortController();
  const seen: FeedRecord[] = [];
  let outcome: unknown = 'running';
  const done = (async () => {
    for await (const record of view.follow({ signal: controller.signal })) seen.push(record);
  })().then(
    () => void (outcome = 'ended'),
    (error: unknown) => void (outcome = error),
  );
  const until = async (test: () => boolean, what: string) => {
    for (let tries = 0; !test(); tries++) {
      if (outcome !== 'running') throw new Error(`the follow ended before ${what}`, { cause: outcome });
      if (tries > 1000) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const stop = async () => {
    controller.abort();
    await done;
    return outcome;
  };
  return { seen, until, stop };
}

describe('follow on a read-only view through a passing failure', () => {
  it('a view that runs out of file descriptors for a while goes on following, each event once and in order', async () => {
    const directory = freshDir();
    const stream = randomStream('followed');
    const writer = await fileStore({ directory });
    // Everything that takes a descriptor (listing the log directory, opening a file) fails with EMFILE while
    // `refusing` is set: the view looks for new segments on every catch-up.
    let refusing = false;
    const emfile = () => Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    const fs: Partial<FileSystem> = {
      readdir: async (path) => {
        if (refusing) throw emfile();
        return nodeFileSystem.readdir(path);
      },
      open: async (path, flags, mode) => {
        if (refusing) throw emfile();
        return nodeFileSystem.open(path, flags, mode);
      },
    };
    const interrupted: Interrupted[] = [];
    let resumed = 0;
    const view = await fileStore({
      directory,
      readOnly: true,
      fs,
      observer: { followInterrupted: (outage) => void interrupted.push(outage), followResumed: () => void resumed++ },
    });
    const follow = following(view);
    try {
      await writer.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
      await follow.until(() => follow.seen.length === 1, 'the first event');
      refusing = true;
      await writer.append(stream, [{ type: 'B', data: 2 }], { expectedRevision: 'any' });
      await follow.until(() => interrupted.length >= 2, 'two failed attempts');
      refusing = false;
      await writer.append(stream, [{ type: 'C', data: 3 }], { expectedRevision: 'any' });
      await follow.until(() => follow.seen.length === 3, 'the third event');
      expect(follow.seen.map((r) => `${r.position}:${r.type}`)).toEqual(['1:A', '2:B', '3:C']);
      expect(interrupted.slice(0, 2).map((outage) => outage.attempts)).toEqual([1, 2]);
      expect(interrupted[0]?.error.code).toBe('storage_error');
      expect(resumed).toBe(1);
    } finally {
      refusing = false;
      expect(await follow.stop()).toBe('ended');
      await view.close();
      await writer.close();
    }
  });
});

/** Appends to the writer `writer()` returns: one event of about 200 bytes each, so small segments fill fast. */
function appender(writer: () => FileEventStore) {
  return async (stream: string, n: number) =>
    (await writer().append(stream, [{ type: 'N', data: { n, pad: 'x'.repeat(100) } }], { expectedRevision: 'any' })).position;
}

/** Each record once, in log order. */
function expectOnceInOrder(records: readonly FeedRecord[]): void {
  const positions = records.map((r) => r.position);
  expect(positions, 'each record once, in log order').toEqual([...new Set(positions)].sort((a, b) => a - b));
}

describe('follow on a read-only view across what the writer does', () => {
  it('follows across writer restarts and new segments: each event once, in order', async () => {
    const directory = freshDir();
    const stream = randomStream('followed');
    const previous = setSegmentBytesForTests(600);
    let writer = await fileStore({ directory });
    const append = appender(() => writer);
    const view = await fileStore({ directory, readOnly: true });
    const follow = following(view);
    try {
      let last = 0;
      for (let n = 0; n < 10; n++) last = await append(stream, n);
      await follow.until(() => follow.seen.at(-1)?.position === last, 'the first appends');
      await writer.close();
      writer = await fileStore({ directory });
      for (let n = 10; n < 20; n++) last = await append(stream, n);
      await follow.until(() => follow.seen.at(-1)?.position === last, 'the appends after the restart');
      expect(segmentsOf(directory).length).toBeGreaterThan(3);
      // A writer that reopens and appends while the view is between polls.
      await writer.close();
      writer = await fileStore({ directory });
      last = await append(stream, 20);
      await follow.until(() => follow.seen.at(-1)?.position === last, 'the append after the second restart');
    } finally {
      setSegmentBytesForTests(previous);
      expect(await follow.stop()).toBe('ended');
    }
    expectOnceInOrder(follow.seen);
    expect(follow.seen.map((r) => (r as RecordedEvent).revision)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect((await view.read(stream)).revision).toBe(21);
    await view.close();
    await writer.close();
  });

  it('follows while the writer cleans sealed segments a deletion left mostly dead: each record once, in order', async () => {
    const directory = freshDir();
    const [kept, dropped] = [randomStream('kept'), randomStream('dropped')];
    const previous = setSegmentBytesForTests(600);
    const writer = await fileStore({ directory });
    const append = appender(() => writer);
    const view = await fileStore({ directory, readOnly: true });
    const follow = following(view);
    try {
      let last = 0;
      for (let n = 0; n < 10; n++) last = await append(n % 2 === 0 ? kept : dropped, n);
      await follow.until(() => follow.seen.at(-1)?.position === last, 'the first appends');
      await writer.deleteStream(dropped, { expectedRevision: 'any' });
      for (let n = 10; n < 20; n++) last = await append(kept, n);
      await follow.until(() => follow.seen.at(-1)?.position === last, 'the appends after the deletion');
    } finally {
      setSegmentBytesForTests(previous);
      expect(await follow.stop()).toBe('ended');
    }
    expectOnceInOrder(follow.seen);
    expect(follow.seen).toHaveLength(21);
    expect(follow.seen.filter((r) => r.streamId === kept).map((r) => (r as RecordedEvent).revision)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    expect(follow.seen.filter((r) => r.streamId === dropped).map((r) => r.type)).toEqual(['N', 'N', 'N', 'N', 'N', '$deleted']);
    expect((await view.read(kept)).revision).toBe(15);
    expect((await view.read(dropped)).revision).toBe(0);
    await view.close();
    // The log as cleaned keeps its own rules: checked from scratch, it has no problem.
    expect((await writer.verify()).problems).toEqual([]);
    await writer.close();
  });
});
