import { memoryStore, StoreClosedError, type CompleteEventStore, type EventStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from './index.js';

// The memory store cannot reopen, so here it sits behind handles: closing a handle leaves the storage intact and
// `reopen` hands out a new handle on it. This runs the persistence tests and reopen steps of the suite itself.
const storage = new WeakMap<EventStore, CompleteEventStore>();

function handleOn(inner: CompleteEventStore): EventStore {
  let closed = false;
  const closing = new AbortController();
  const guard = () => {
    if (closed) throw new StoreClosedError('memory handle');
  };
  const handle: EventStore = {
    append: async (...args) => (guard(), inner.append(...args)),
    read: async (...args) => (guard(), inner.read(...args)),
    readAll: (...args) => (guard(), inner.readAll(...args)),
    readStored: async (...args) => (guard(), inner.readStored(...args)),
    readAllStored: (...args) => (guard(), inner.readAllStored(...args)),
    streams: (...args) => (guard(), inner.streams(...args)),
    compact: async (...args) => (guard(), inner.compact(...args)),
    restoreStream: async (...args) => (guard(), inner.restoreStream(...args)),
    deleteStream: async (...args) => (guard(), inner.deleteStream(...args)),
    putBlob: async (...args) => (guard(), inner.putBlob(...args)),
    getBlob: async (...args) => (guard(), inner.getBlob(...args)),
    blobs: (...args) => (guard(), inner.blobs(...args)),
    verify: async (...args) => (guard(), inner.verify(...args)),
    // A follow through the handle ends when the handle closes, as one on a store object does.
    follow: (options) => {
      guard();
      const signal = options?.signal ? AbortSignal.any([options.signal, closing.signal]) : closing.signal;
      return inner.follow({ ...options, signal });
    },
    checkpoints: {
      storeId: async () => (guard(), inner.checkpoints.storeId()),
      load: async (name) => (guard(), inner.checkpoints.load(name)),
      save: async (name, data) => (guard(), inner.checkpoints.save(name, data)),
    },
    status: async () => (guard(), inner.status()),
    close: async () => {
      closed = true;
      closing.abort();
    },
  };
  storage.set(handle, inner);
  return handle;
}

describeEventStoreConformance('memoryStore behind a reopenable handle', () => handleOn(memoryStore({ maxEventBytes: 4096 })), {
  maxEventBytes: 4096,
  openSecond: async (handle) => handleOn(storage.get(handle) as CompleteEventStore),
  reopen: async (handle) => {
    await handle.close();
    return handleOn(storage.get(handle) as CompleteEventStore);
  },
});
