import { describe, expect, it } from 'vitest';
import { StorageError } from '../kernel/errors.js';
import { compactStream } from '../kernel/fold.js';
import { memoryStore, type EventStore, type JsonValue } from '../kernel/index.js';
import { sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { eventsOf, layout, openTestHistory, startConversation, upTo } from './test-support.fixture.js';

/** A memory store whose `compact` first runs `before` (another process's compaction, a failure, a delay). */
function compactingStore(before: (store: EventStore, stream: string) => Promise<void>): {
  store: EventStore;
  compactions: () => number;
  overlapping: () => number;
} {
  const inner = memoryStore();
  let count = 0;
  let running = 0;
  let overlapping = 0;
  const store: EventStore = {
    ...inner,
    compact: async (stream, snapshot) => {
      count++;
      running++;
      overlapping = Math.max(overlapping, running);
      try {
        await before(inner, stream);
        return await inner.compact(stream, snapshot);
      } finally {
        running--;
      }
    },
  };
  return { store, compactions: () => count, overlapping: () => overlapping };
}

describe('compaction on its own', () => {
  it('compacts a session stream once a call leaves more than everyEvents beyond its snapshot, keeping the newest keepEvents', async () => {
    const { history, store } = await openTestHistory({ compaction: { everyEvents: 10, keepEvents: 3 } });
    const session = await startConversation(history, 'long');
    const stream = sessionStream(session.id);
    for (let line = 1; line <= 9; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `line ${line}` });
    expect(await layout(store, stream)).toEqual({ snapshot: 0, events: upTo(10) });
    await history.appendTranscript(session.id, { role: 'user-message', text: 'line 10' });
    const before = await history.get(session.id);
    for (let line = 11; line <= 17; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `line ${line}` });
    await history.close();
    // Revision 11 was the first past 10 events (snapshot at 8); revision 18 is not more than 10 beyond that.
    expect(await layout(store, stream)).toEqual({ snapshot: 8, events: upTo(10, 9) });
    const { history: reopened } = await openTestHistory({ store, compaction: false });
    const events = (await reopened.get(session.id)).state['events'] as JsonValue[];
    expect(events).toHaveLength(17);
    expect(events.slice(0, 10)).toEqual(before.state['events']);
  });

  it('is on by default, every 1,000 events keeping 100, and off with compaction: false', async () => {
    for (const compaction of [undefined, false] as const) {
      const { history, store } = await openTestHistory(compaction === undefined ? {} : { compaction });
      const session = await startConversation(history, 'default');
      await Promise.all(upTo(1000).map((line) => history.appendTranscript(session.id, { role: 'user-message', text: `line ${line}` })));
      await history.close();
      const { snapshot, events } = await layout(store, sessionStream(session.id));
      if (compaction === false) expect({ snapshot, kept: events.length }).toEqual({ snapshot: 0, kept: 1001 });
      else expect({ snapshot, kept: events.length }).toEqual({ snapshot: 901, kept: 100 });
    }
  });

  it('refuses a compaction option that is neither false nor two whole numbers', async () => {
    for (const compaction of [true, {}, { everyEvents: -1, keepEvents: 0 }, { everyEvents: 10, keepEvents: 1.5 }]) {
      await expect(openTestHistory({ compaction: compaction as never })).rejects.toMatchObject({ code: 'invalid_request', field: 'compaction' });
    }
  });

  it('never fails a call: a compaction that failed is tried again after more events', async () => {
    let fail = true;
    const { store } = compactingStore(async () => {
      if (fail) throw new StorageError('disk full');
    });
    const { history } = await openTestHistory({ store, compaction: { everyEvents: 2, keepEvents: 0 } });
    const session = await startConversation(history, 'failing');
    for (let line = 1; line <= 6; line++)
      await expect(history.appendTranscript(session.id, { role: 'user-message', text: `${line}` })).resolves.toMatchObject({ boxId: line });
    fail = false;
    for (let line = 7; line <= 9; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `${line}` });
    await history.close();
    expect((await layout(store, sessionStream(session.id))).snapshot).toBeGreaterThan(0);
  });

  it('ignores a compaction that lost the race to another process', async () => {
    // Another process compacts the stream to its head just before this one's compaction lands.
    const { store } = compactingStore((inner, stream) => compactStream(inner, stream, sessionReducer).then(() => undefined));
    const { history } = await openTestHistory({ store, compaction: { everyEvents: 3, keepEvents: 1 } });
    const session = await startConversation(history, 'raced');
    for (let line = 1; line <= 8; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `${line}` });
    await history.close();
    const { history: reopened } = await openTestHistory({ store });
    expect((await reopened.get(session.id)).state.events).toHaveLength(8);
  });

  it('runs one compaction of a stream at a time, in the stream’s queue, and close() waits for those in flight', async () => {
    const compacting = compactingStore(() => new Promise((resolve) => setTimeout(resolve, 5)));
    const { history } = await openTestHistory({ store: compacting.store, compaction: { everyEvents: 1, keepEvents: 0 } });
    const session = await startConversation(history, 'busy');
    await Promise.all(upTo(50).map((line) => history.appendTranscript(session.id, { role: 'user-message', text: `${line}` })));
    for (let line = 51; line <= 60; line++) await history.appendTranscript(session.id, { role: 'user-message', text: `${line}` });
    await history.close();
    expect(compacting.overlapping()).toBe(1);
    expect(compacting.compactions()).toBeGreaterThan(1);
    const { snapshot, events } = await layout(compacting.store, sessionStream(session.id));
    // The last compaction, awaited by close(), reached the head.
    expect({ snapshot, events }).toEqual({ snapshot: 61, events: [] });
    expect(await eventsOf(compacting.store, sessionStream(session.id))).toEqual([]);
  });
});
