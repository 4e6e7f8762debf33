import { createHash, randomUUID } from 'node:crypto';
import { CorruptionError, type CheckpointData, type CheckpointSlot } from '@sessionfold/core/kernel';
import { validateCheckpointData, validateCheckpointName, validateNewCheckpointName } from '@sessionfold/core/store-kit';
import type { SqliteDatabase } from './database.js';

/**
 * The store's identity and the checkpoint slot live in two tables beside the event schema, created with
 * `IF NOT EXISTS` rather than by a schema migration: they hold nothing the events depend on, so a file that
 * has them still opens with a release that does not know them (it ignores them), and one without them gets
 * them at its next open.
 */
const CREATE = `
  CREATE TABLE IF NOT EXISTS store_identity (
    id TEXT NOT NULL
  );
  -- data keeps the type it was saved with (TEXT or BLOB: the column has no affinity to convert it);
  -- sha256 covers kind and bytes, since SQLite checks its pages' structure but not their contents.
  CREATE TABLE IF NOT EXISTS checkpoints (
    name     TEXT PRIMARY KEY,
    store_id TEXT NOT NULL,
    sha256   TEXT NOT NULL,
    data     BLOB NOT NULL
  );
`;

/**
 * Makes sure the file has a store id (creating the tables and the id when missing) and returns it. Racing
 * openers are safe: the id is read again under the write lock, so only the first one writes it.
 */
export function ensureStoreId(db: SqliteDatabase): string {
  const read = () => {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_identity'").pluck().get();
    return exists === undefined ? undefined : (db.prepare('SELECT id FROM store_identity').pluck().get() as string | undefined);
  };
  const found = read();
  if (found !== undefined) return found;
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(CREATE);
    let id = read();
    if (id === undefined) {
      id = randomUUID();
      db.prepare('INSERT INTO store_identity (id) VALUES (?)').run(id);
    }
    db.exec('COMMIT');
    return id;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** What the slot needs from the store: its connection, the way it runs reads and durable writes. */
export interface SlotContext {
  readonly db: SqliteDatabase;
  readonly path: string;
  readonly storeId: string;
  /** Runs a read: checks the store is open, translates driver errors. */
  guard<T>(work: () => T): T;
  /** Runs a write in the store's next shared write transaction; resolves after the commit. */
  submit<T>(work: () => T): Promise<T>;
  /** Checks the store is open and may write. */
  writable(): void;
  /** Tells the store's observer about damage before it is thrown. */
  corrupt<E extends Error>(error: E): E;
}

/** The checkpoint slot of a SQLite store: one row per name, replaced in one transaction (atomic and durable as any write). */
export function createCheckpointSlot(ctx: SlotContext): CheckpointSlot {
  const select = ctx.db.prepare('SELECT store_id, sha256, data FROM checkpoints WHERE name = ?');
  const upsert = ctx.db.prepare(
    'INSERT INTO checkpoints (name, store_id, sha256, data) VALUES (?, ?, ?, ?) ' +
      'ON CONFLICT (name) DO UPDATE SET store_id = excluded.store_id, sha256 = excluded.sha256, data = excluded.data',
  );
  return {
    async storeId() {
      return ctx.guard(() => ctx.storeId);
    },

    async load(name) {
      ctx.guard(() => validateCheckpointName(name));
      const row = ctx.guard(() => select.get(name) as { store_id: string; sha256: string; data: string | Uint8Array } | undefined);
      if (row === undefined || row.store_id !== ctx.storeId) return undefined;
      const data: CheckpointData = typeof row.data === 'string' ? row.data : new Uint8Array(row.data);
      if (checkpointDigest(data) !== row.sha256) {
        throw ctx.corrupt(new CorruptionError(ctx.path, undefined, `table checkpoints: checkpoint ${name} does not match its sha256`));
      }
      return data;
    },

    async save(name, data) {
      ctx.writable();
      validateNewCheckpointName(name);
      validateCheckpointData(data);
      // Copied now: the caller may reuse its buffer before the shared commit runs.
      const stored = typeof data === 'string' ? data : Buffer.from(data);
      const digest = checkpointDigest(data);
      await ctx.submit(() => upsert.run(name, ctx.storeId, digest, stored));
    },
  };
}

/** The sha256 of the data's kind and bytes: text and the same bytes saved as binary differ. */
export function checkpointDigest(data: CheckpointData): string {
  return createHash('sha256')
    .update(typeof data === 'string' ? 't' : 'b')
    .update(data)
    .digest('hex');
}
