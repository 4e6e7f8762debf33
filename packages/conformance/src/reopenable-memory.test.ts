import { memoryStore, StoreClosedError, type EventStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from './index.js';

// The memory store cannot reopen, so here it sits behind handles: closing a handle leaves the storage intact and
// `reopen` hands out a new handle on it. This runs the persistence tests and reopen steps of the suite itself.
const storage = new WeakMap<EventStore, EventStore>();

function handleOn(inner: EventStore): EventStore {
  let closed = false;
  const guard = () => {
    if (closed) throw new StoreClosedError('memory handle');
  };
  const handle: EventStore = {
    append: async (...args) => (guard(), inner.append(...args)),
    read: async (...args) => (guard(), inner.read(...args)),
    readAll: (...args) => (guard(), inner.readAll(...args)),
    streams: (...args) => (guard(), inner.streams(...args)),
    compact: async (...args) => (guard(), inner.compact(...args)),
    restoreStream: async (...args) => (guard(), inner.restoreStream(...args)),
    deleteStream: async (...args) => (guard(), inner.deleteStream(...args)),
    putBlob: async (...args) => (guard(), inner.putBlob(...args)),
    getBlob: async (...args) => (guard(), inner.getBlob(...args)),
    blobs: (...args) => (guard(), inner.blobs(...args)),
    close: async () => {
      closed = true;
    },
  };
  storage.set(handle, inner);
  return handle;
}

describeEventStoreConformance('memoryStore behind a reopenable handle', () => handleOn(memoryStore({ maxEventBytes: 4096 })), {
  maxEventBytes: 4096,
  reopen: async (handle) => {
    await handle.close();
    return handleOn(storage.get(handle) as EventStore);
  },
});
