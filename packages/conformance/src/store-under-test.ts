import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore } from '@sessionfold/core/kernel';
import type { EventStoreCapabilities } from './capabilities.js';

/**
 * A store to test or measure, described once: how it opens on a directory, whether opening the same directory
 * again reads the data back, what it keeps outside the directory, and what it can do beyond the port. A
 * harness (the cross-store comparisons, the benchmark) owns the directories; `storeLifecycle` makes one.
 */
export interface StoreUnderTest {
  /** The store's name in failure messages and tables. */
  readonly name: string;
  /** Whether `open` on a directory used before reads back what was written there (false: the memory store). */
  readonly durable: boolean;
  /** Opens the store kept under `dir`: an empty directory makes a new, empty store, the same one again reopens it. */
  open(dir: string): Promise<EventStore>;
  /** Removes what the store kept outside `dir` (a database schema), once its stores are closed; the harness removes `dir`. */
  dispose?(dir: string): Promise<void>;
  /** What the conformance suite should know beyond the port (reopen, concurrency, optional members). */
  readonly capabilities?: EventStoreCapabilities;
}

/**
 * One store under test from its creation to its removal. `reopen` closes the store and opens the same data
 * again; a store that is not durable is handed back as it is, so only what sits on top of it is reopened.
 */
export interface StoreLifecycle {
  readonly name: string;
  readonly durable: boolean;
  /** The store, opened for the first time. */
  open(): Promise<EventStore>;
  /** Closes `store` and opens the same data again (or hands `store` back when not durable). */
  reopen(store: EventStore): Promise<EventStore>;
  /** Closes `store` (if any) and removes everything the lifecycle made. */
  dispose(store: EventStore | undefined): Promise<void>;
}

/** A lifecycle of `store` on a fresh temporary directory, made on first open and removed on dispose. */
export function storeLifecycle(store: StoreUnderTest, options: { prefix?: string } = {}): StoreLifecycle {
  let dir: string | undefined;
  const prefix = options.prefix ?? 'sessionfold-store-';
  return {
    name: store.name,
    durable: store.durable,
    async open() {
      dir ??= await mkdtemp(join(tmpdir(), `${prefix}${store.name}-`));
      return store.open(dir);
    },
    async reopen(opened) {
      if (!store.durable || dir === undefined) return opened;
      await opened.close();
      return store.open(dir);
    },
    async dispose(opened) {
      await opened?.close().catch(() => undefined);
      if (dir === undefined) return;
      try {
        await store.dispose?.(dir);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
