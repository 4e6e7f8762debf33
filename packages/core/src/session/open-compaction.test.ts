import { describe, expect, it } from 'vitest';
import { StorageError } from '../kernel/errors.js';
import { memoryStore, type EventStore } from '../kernel/index.js';
import type { CompactionObservation } from './compaction.js';
import type { SessionHistoryError } from './errors.js';
import { sessionStream } from './ids.js';
import type { SessionHistory } from './service.js';
import { layout, openTestHistory, startConversation, upTo } from './test-support.fixture.js';

/** Starts a session and gives it `lines` transcript lines: a stream at revision `lines + 1`. */
async function longSession(history: SessionHistory, key: string, lines: number): Promise<string> {
  const session = await startConversation(history, key);
  for (let line = 1; line <= lines; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `${key} ${line}` });
  return session.id;
}

/** An observer resolving `compacted(stream)` once a compaction of that stream is reported. */
function compactionWatch() {
  const seen: CompactionObservation[] = [];
  const waiting = new Map<string, () => void>();
  return {
    seen,
    observer: {
      compaction: (done: CompactionObservation) => {
        seen.push(done);
        waiting.get(done.stream)?.();
      },
    },
    compacted: (stream: string) =>
      new Promise<void>((resolve) => {
        if (seen.some((done) => done.stream === stream)) resolve();
        else waiting.set(stream, resolve);
      }),
  };
}

describe('compaction at open', () => {
  it('compacts, after the open, a long stream written while compaction was off and never written again', async () => {
    const { history: writer, store } = await openTestHistory({ compaction: false });
    const long = await longSession(writer, 'long', 29);
    const short = await longSession(writer, 'short', 5);
    const before = await writer.get(long);
    await writer.close();
    expect(await layout(store, sessionStream(long))).toEqual({ snapshot: 0, events: upTo(30) });

    const watch = compactionWatch();
    const { history } = await openTestHistory({ store, observer: watch.observer, compaction: { everyEvents: 10, keepEvents: 3 } });
    await watch.compacted(sessionStream(long));
    expect(watch.seen).toEqual([{ stream: sessionStream(long), revision: 27, droppedEvents: 27, durationMs: expect.any(Number) }]);
    expect(await layout(store, sessionStream(long))).toEqual({ snapshot: 27, events: upTo(3, 28) });
    expect(await layout(store, sessionStream(short))).toEqual({ snapshot: 0, events: upTo(6) });
    expect(await history.get(long)).toEqual(before);
    await history.close();
  });

  it('compacts nothing at open when compaction is off, or in a read-only service', async () => {
    const { history: writer, store } = await openTestHistory({ compaction: false });
    const long = await longSession(writer, 'long', 29);
    await writer.close();
    for (const options of [{ compaction: false as const }, { compaction: { everyEvents: 10, keepEvents: 3 }, readOnly: true }]) {
      const { history } = await openTestHistory({ store, ...options });
      // A write to another stream goes through the store after the sweep would have looked at the long one.
      if (!options.readOnly) await startConversation(history, 'other');
      await history.close();
    }
    expect(await layout(store, sessionStream(long))).toEqual({ snapshot: 0, events: upTo(30) });
  });

  it('a writer in another process loses nothing to a compaction at open that runs beside its appends', async () => {
    const inner = memoryStore();
    const { history: writer } = await openTestHistory({ store: inner, compaction: false });
    const id = await longSession(writer, 'shared', 19);
    let appended = false;
    const store: EventStore = {
      ...inner,
      // The other process appends between the compaction's read and its snapshot.
      compact: async (stream, snapshot) => {
        if (!appended) {
          appended = true;
          for (let line = 1; line <= 4; line++) await writer.appendTranscript(id, { role: 'user-message', text: `theirs ${line}` });
        }
        return inner.compact(stream, snapshot);
      },
    };
    const watch = compactionWatch();
    const { history } = await openTestHistory({ store, observer: watch.observer, compaction: { everyEvents: 10, keepEvents: 2 } });
    await watch.compacted(sessionStream(id));
    expect(watch.seen).toMatchObject([{ revision: 18, droppedEvents: 18 }]);
    expect(await layout(inner, sessionStream(id))).toEqual({ snapshot: 18, events: upTo(6, 19) });
    const record = await history.get(id);
    expect(record.version).toBe((await writer.get(id)).version);
    expect((record.state['events'] as unknown[]).length).toBe(23);
    await history.close();
    await writer.close();
  });

  it('tells the observer when the streams cannot be listed, and leaves them as they are', async () => {
    const inner = memoryStore();
    const { history: writer } = await openTestHistory({ store: inner, compaction: false });
    const id = await longSession(writer, 'long', 29);
    await writer.close();
    const store: EventStore = {
      ...inner,
      streams: () => {
        throw new StorageError('listing failed');
      },
    };
    let heard!: (failure: { error: SessionHistoryError; cause: unknown; source: string }) => void;
    const failed = new Promise<{ error: SessionHistoryError; cause: unknown; source: string }>((resolve) => (heard = resolve));
    const { history } = await openTestHistory({ store, compaction: { everyEvents: 10, keepEvents: 3 }, observer: { storageFailed: heard } });
    expect(await failed).toEqual({ error: expect.objectContaining({ code: 'internal_error' }), cause: expect.any(StorageError), source: 'open-compaction' });
    await history.close();
    expect(await layout(inner, sessionStream(id))).toEqual({ snapshot: 0, events: upTo(30) });
  });

  it('closing while the open compacts waits for the stream being compacted and starts no other', async () => {
    const inner = memoryStore();
    const { history: writer } = await openTestHistory({ store: inner, compaction: false });
    const ids: string[] = [];
    for (let session = 0; session < 6; session++) ids.push(await longSession(writer, `long-${session}`, 14));
    await writer.close();
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let compactions = 0;
    const store: EventStore = {
      ...inner,
      compact: async (stream, snapshot) => {
        compactions++;
        started();
        await gate;
        return inner.compact(stream, snapshot);
      },
    };
    const { history } = await openTestHistory({ store, compaction: { everyEvents: 10, keepEvents: 3 } });
    await firstStarted;
    let closed = false;
    const closing = history.close().then(() => (closed = true));
    await Promise.resolve();
    expect(closed).toBe(false);
    release();
    await closing;
    expect(compactions).toBe(1);
    const layouts = await Promise.all(ids.map((id) => layout(inner, sessionStream(id))));
    expect(layouts.filter((found) => found.snapshot === 12)).toHaveLength(1);
    expect(layouts.filter((found) => found.snapshot === 0)).toHaveLength(5);
    await expect(history.get(ids[0] as string)).rejects.toMatchObject({ code: 'invalid_request' });
    const { history: reopened } = await openTestHistory({ store: inner, compaction: false });
    for (const id of ids) expect((await reopened.get(id)).state['events']).toHaveLength(14);
    await reopened.close();
  });
});
