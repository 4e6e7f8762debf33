import { memoryStore, StoreClosedError, type EventStore } from '@sessionfold/core';
import { describeEventStoreConformance } from './index.js';

const handles = new WeakMap<EventStore, EventStore>();
function wrap(inner: EventStore): EventStore {
  let closed = false;
  const guard = () => { if (closed) throw new StoreClosedError('wrapper'); };
  const store: EventStore = {
    append: async (...a) => { guard(); return inner.append(...a); },
    read: async (...a) => { guard(); return inner.read(...a); },
    readAll: (...a) => { guard(); return inner.readAll(...a); },
    streams: (...a) => { guard(); return inner.streams(...a); },
    compact: async (...a) => { guard(); return inner.compact(...a); },
    restoreStream: async (...a) => { guard(); return inner.restoreStream(...a); },
    deleteStream: async (...a) => { guard(); return inner.deleteStream(...a); },
    putBlob: async (...a) => { guard(); return inner.putBlob(...a); },
    getBlob: async (...a) => { guard(); return inner.getBlob(...a); },
    blobs: (...a) => { guard(); return inner.blobs(...a); },
    close: async () => { closed = true; },
  };
  handles.set(store, inner);
  return store;
}
describeEventStoreConformance('reopenable memory', () => wrap(memoryStore({ maxEventBytes: 4096 })), {
  maxEventBytes: 4096,
  reopen: async (store) => { await store.close(); return wrap(handles.get(store)!); },
  numRuns: 50,
});
