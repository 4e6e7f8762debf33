import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, StoreClosedError, type RecordedEvent, type StoreObserver } from '@sessionfold/core/kernel';
import { ChangeSignal, followFeed, type ObserverCall } from '@sessionfold/core/store-kit';

const record = (position: number): RecordedEvent => ({
  streamId: 's',
  type: 'T',
  data: null,
  revision: position,
  position,
  recordedAt: '2026-01-01T00:00:00.000Z',
  schemaVersion: 1,
});

describe('ChangeSignal', () => {
  it('a change made between a read and the wait is not missed: the wait compares versions', async () => {
    const changes = new ChangeSignal();
    const seen = changes.version;
    changes.notify();
    expect(await changes.wait(seen, 10_000)).toBe('changed');
  });

  it('a wait ends on notify, timeout, abort and close; after close every wait ends at once', async () => {
    const changes = new ChangeSignal();
    const waiting = changes.wait(changes.version, 10_000);
    changes.notify();
    expect(await waiting).toBe('changed');
    expect(await changes.wait(changes.version, 5)).toBe('timeout');
    const controller = new AbortController();
    const aborted = changes.wait(changes.version, 10_000, controller.signal);
    controller.abort();
    expect(await aborted).toBe('aborted');
    const closing = changes.wait(changes.version, 10_000);
    changes.close();
    expect(await closing).toBe('closed');
    expect(await changes.wait(changes.version, 10_000)).toBe('closed');
  });
});

describe('followFeed', () => {
  it('reads on from the last record yielded, waking on each change, and returns when closed', async () => {
    const feed: RecordedEvent[] = [record(1), record(3)];
    const changes = new ChangeSignal();
    const asked: number[] = [];
    const readAll = async function* (from: number) {
      asked.push(from);
      yield* feed.filter((r) => r.position >= from);
    };
    const got: number[] = [];
    const following = (async () => {
      for await (const r of followFeed({ readAll, changes, pollMs: 10_000 }, 1)) {
        got.push(r.position);
        if (got.length === 2) {
          feed.push(record(7));
          changes.notify();
        }
        if (got.length === 3) changes.close();
      }
    })();
    await following;
    expect(got).toEqual([1, 3, 7]);
    expect(asked).toEqual([1, 4]);
  });

  it('asks changedElsewhere on each poll and reads again only when it says so', async () => {
    let polls = 0;
    let reads = 0;
    const changes = new ChangeSignal();
    const controller = new AbortController();
    const source = {
      readAll: async function* () {
        reads++;
      },
      changes,
      pollMs: 5,
      changedElsewhere: () => {
        polls++;
        if (polls === 3) return true;
        if (polls === 6) controller.abort();
        return false;
      },
    };
    for await (const _ of followFeed(source, 1, controller.signal)) expect.fail('nothing to yield');
    expect(reads).toBe(2);
    expect(polls).toBe(6);
  });

  it('a store closing under a read ends the iteration; any other failure is thrown', async () => {
    const changes = new ChangeSignal();
    const closed = async function* (): AsyncGenerator<RecordedEvent> {
      yield record(1);
      throw new StoreClosedError();
    };
    const got: number[] = [];
    for await (const r of followFeed({ readAll: closed, changes, pollMs: 10 }, 1)) got.push(r.position);
    expect(got).toEqual([1]);
    const failing = async function* (): AsyncGenerator<RecordedEvent> {
      throw new StorageError('disk gone');
    };
    await expect(
      (async () => {
        for await (const _ of followFeed({ readAll: failing, changes: new ChangeSignal(), pollMs: 10 }, 1)) break;
      })(),
    ).rejects.toBeInstanceOf(StorageError);
  });

  it('a transient failure is retried from the position after the last record yielded, each attempt and the end of the outage told', async () => {
    const feed = [record(1), record(2), record(3), record(4)];
    const changes = new ChangeSignal();
    const asked: number[] = [];
    let failures = 0;
    const readAll = async function* (from: number): AsyncGenerator<RecordedEvent> {
      asked.push(from);
      for (const r of feed.filter((r) => r.position >= from)) {
        // The connection dies twice in a row after the second record, and once more before the first read of 3.
        if (r.position === 3 && failures < 3) {
          failures++;
          throw new StorageError(`connection lost ${failures}`);
        }
        yield r;
      }
    };
    const told: string[] = [];
    const observe: ObserverCall<StoreObserver> = (hook, value) => {
      const v = value as { attempts: number; error?: Error };
      told.push(`${String(hook)} ${v.attempts}${v.error ? ` ${v.error.message}` : ''}`);
    };
    const got: number[] = [];
    const transient = (error: unknown): error is StorageError => error instanceof StorageError;
    for await (const r of followFeed({ readAll, changes, pollMs: 10_000, transient, observe }, 1)) {
      got.push(r.position);
      if (got.length === 4) changes.close();
    }
    expect(got).toEqual([1, 2, 3, 4]);
    expect(asked).toEqual([1, 3, 3, 3]);
    expect(told).toEqual([
      'followInterrupted 1 connection lost 1',
      'followInterrupted 2 connection lost 2',
      'followInterrupted 3 connection lost 3',
      'followResumed 3',
    ]);
  });

  it('a follower in an outage ends on its signal and on the store closing, and a failure that is not transient still ends it', async () => {
    const down = async function* (): AsyncGenerator<RecordedEvent> {
      throw new StorageError('server down');
    };
    const transient = (error: unknown): error is StorageError => error instanceof StorageError && error.message === 'server down';
    let attempts = 0;
    const controller = new AbortController();
    const aborting: ObserverCall<StoreObserver> = () => {
      if (++attempts === 2) controller.abort();
    };
    for await (const _ of followFeed({ readAll: down, changes: new ChangeSignal(), pollMs: 10, transient, observe: aborting }, 1, controller.signal)) {
      expect.fail('nothing to yield');
    }
    expect(attempts).toBe(2);
    const changes = new ChangeSignal();
    const closing: ObserverCall<StoreObserver> = () => changes.close();
    for await (const _ of followFeed({ readAll: down, changes, pollMs: 10, transient, observe: closing }, 1)) expect.fail('nothing to yield');
    const corrupt = async function* (): AsyncGenerator<RecordedEvent> {
      throw new CorruptionError('events', 3, 'bad record');
    };
    await expect(
      (async () => {
        for await (const _ of followFeed({ readAll: corrupt, changes: new ChangeSignal(), pollMs: 10, transient }, 1)) break;
      })(),
    ).rejects.toBeInstanceOf(CorruptionError);
  });

  it('a pause ends on its time, abort or close, but not on a change', async () => {
    const changes = new ChangeSignal();
    const pausing = changes.pause(20);
    changes.notify();
    expect(await pausing).toBe('timeout');
    const controller = new AbortController();
    const aborted = changes.pause(10_000, controller.signal);
    controller.abort();
    expect(await aborted).toBe('aborted');
    const closing = changes.pause(10_000);
    changes.close();
    expect(await closing).toBe('closed');
  });
});
