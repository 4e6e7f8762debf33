import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { CorruptionError, StorageError, type CheckpointData, type CheckpointSlot } from '@sessionfold/core/kernel';
import { validateCheckpointData, validateCheckpointName, validateNewCheckpointName } from '@sessionfold/core/store-kit';
import { writeFileAtomic } from '@sessionfold/atomic-write';
import { atomicWriteFs, errorCode, listDir, unlinkIfPresent, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine, sha256Hex } from './journal-codec.js';
import { Layout } from './layout.js';

/** Names the kind of file, so a checkpoint is never mistaken for other JSON. */
const CHECKPOINT_FORMAT = 'sessionfold.checkpoint';
const STORE_ID_FORMAT = 'sessionfold.store-id';

/**
 * The store's id, from `<dir>/store-id.json` (one framed line), written by the writer that creates the store
 * (or, for a store made before ids existed, by its next writer). Undefined when there is none yet.
 */
export async function readStoreId(fsl: FileSystem, layout: Layout): Promise<string | undefined> {
  let bytes: Buffer;
  try {
    bytes = await fsl.readFile(layout.storeId);
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw new StorageError(`@sessionfold/store-file: could not read ${layout.storeId}.`, { cause });
  }
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) throw new CorruptionError(layout.storeId, 1, 'a store id file is exactly one line');
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) throw new CorruptionError(layout.storeId, 1, decoded.reason);
  const { format, storeId } = (decoded.value ?? {}) as Record<string, unknown>;
  if (format !== STORE_ID_FORMAT || typeof storeId !== 'string' || storeId.length === 0) throw new CorruptionError(layout.storeId, 1, 'not a store id record');
  return storeId;
}

/**
 * Makes sure the store has an id (the writer calls it at open, holding the lock) and clears temporaries left in
 * `checkpoints/` by a save a crash cut short. Returns the id.
 */
export async function ensureStoreId(fsl: FileSystem, layout: Layout): Promise<string> {
  for (const name of await listDir(fsl, layout.checkpoints)) {
    if (Layout.isTemporary(name)) await unlinkIfPresent(fsl, join(layout.checkpoints, name));
  }
  const found = await readStoreId(fsl, layout);
  if (found !== undefined) return found;
  const storeId = randomUUID();
  try {
    await writeFileAtomic(layout.storeId, frameLine(JSON.stringify({ format: STORE_ID_FORMAT, storeId })), { mode: 0o600, fs: atomicWriteFs(fsl) });
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not write ${layout.storeId}.`, { cause });
  }
  return storeId;
}

/** What the slot needs from the store. */
export interface SlotContext {
  readonly fs: FileSystem;
  readonly layout: Layout;
  /** The id read or made at open; undefined in a read-only view of a store no writer has opened since ids exist. */
  storeId(): string | undefined;
  /** Checks the store is open. */
  assertOpen(): void;
  /** Checks the store is open and may write. */
  assertWritable(): void;
  /** Runs a write so that `close` waits for it. */
  track<T>(work: () => Promise<T>): Promise<T>;
}

/**
 * Checkpoints as files `<dir>/checkpoints/<name>`: a framed header line (format, store id, kind, length and
 * sha256 of the data) followed by the data's bytes, replaced atomically (temp sibling, fsync, rename, fsync
 * directory). Outside `streams/`, so no read, feed or copy ever meets them.
 */
export function createCheckpointSlot(ctx: SlotContext): CheckpointSlot {
  const { fs: fsl, layout } = ctx;
  const ownId = (): string => {
    const id = ctx.storeId();
    if (id === undefined) {
      throw new StorageError(`@sessionfold/store-file: ${layout.directory} has no store id yet; open it once as a writer to give it one.`);
    }
    return id;
  };
  return {
    async storeId() {
      ctx.assertOpen();
      return ownId();
    },

    async load(name) {
      ctx.assertOpen();
      validateCheckpointName(name);
      const path = layout.checkpoint(name);
      let bytes: Buffer;
      try {
        bytes = await fsl.readFile(path);
      } catch (cause) {
        if (errorCode(cause) === 'ENOENT') return undefined;
        throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause });
      }
      const checked = decodeCheckpoint(bytes, path);
      return checked.storeId === ownId() ? checked.data : undefined;
    },

    save(name, data) {
      return ctx.track(async () => {
        ctx.assertWritable();
        validateNewCheckpointName(name);
        validateCheckpointData(data);
        const path = layout.checkpoint(name);
        const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
        const header = frameLine(
          JSON.stringify({
            format: CHECKPOINT_FORMAT,
            storeId: ownId(),
            kind: typeof data === 'string' ? 'text' : 'bytes',
            length: body.length,
            sha256: sha256Hex(body),
          }),
        );
        try {
          await fsl.mkdir(layout.checkpoints, 0o700);
          await writeFileAtomic(path, Buffer.concat([Buffer.from(header, 'utf8'), body]), { mode: 0o600, fs: atomicWriteFs(fsl) });
        } catch (cause) {
          throw new StorageError(`@sessionfold/store-file: could not write ${path}.`, { cause });
        }
      });
    },
  };
}

/** Checks a checkpoint file's header and data; damage is `CorruptionError` naming the file and line (2: the data). */
export function decodeCheckpoint(bytes: Buffer, path: string): { storeId: string; data: CheckpointData } {
  const end = bytes.indexOf(0x0a);
  if (end < 0) throw new CorruptionError(path, 1, 'the header line has no newline');
  const decoded = decodeLine(bytes, 0, end);
  if ('reason' in decoded) throw new CorruptionError(path, 1, decoded.reason);
  const { format, storeId, kind, length, sha256 } = (decoded.value ?? {}) as Record<string, unknown>;
  if (
    format !== CHECKPOINT_FORMAT ||
    typeof storeId !== 'string' ||
    (kind !== 'text' && kind !== 'bytes') ||
    typeof length !== 'number' ||
    typeof sha256 !== 'string'
  ) {
    throw new CorruptionError(path, 1, 'not a checkpoint header');
  }
  const body = bytes.subarray(end + 1);
  if (body.length !== length || sha256Hex(body) !== sha256) throw new CorruptionError(path, 2, 'the data does not match the length and sha256 in its header');
  if (kind === 'text') return { storeId, data: body.toString('utf8') };
  // A file read whole has its own memory, which the data may keep (no copy of what may be megabytes); a part of a shared pool is copied.
  const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length;
  return { storeId, data: own ? new Uint8Array(body.buffer, body.byteOffset, body.length) : new Uint8Array(body) };
}
