import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { CorruptionError, type CheckpointData, type CheckpointSlot } from '@sessionfold/core/kernel';
import { validateCheckpointData, validateCheckpointName, validateNewCheckpointName } from '@sessionfold/core/store-kit';
import type { QueryArrayConfig, QueryConfig } from 'pg';
import type { Queries } from './queries.js';

/** What the slot needs from the store: its statements and the way it runs them. */
export interface SlotContext {
  readonly schema: string;
  readonly q: Queries;
  /** Runs a statement on the store's pool after checking the store is open; translates driver errors. */
  rows<T>(query: QueryConfig | QueryArrayConfig): Promise<T[]>;
  /** Checks the store is open and may write. */
  writable(): void;
  /** Checks the store is open. */
  live(): void;
  /** Tells the store's observer about damage before it is thrown. */
  corrupt(error: CorruptionError): CorruptionError;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const deflateRaw = promisify(zlib.deflateRaw);

/**
 * Checkpoints from this size on are kept deflated. Each byte read from the server costs: a projection's
 * checkpoint of 7 MB took 120–300 ms to arrive (as bytea it travels as hex, twice its size), deflated about
 * a tenth of that, and inflating it takes a few milliseconds. Below this, deflating would save nothing worth it.
 */
const DEFLATE_FROM = 16 * 1024;
/** zlib's fastest level: JSON shrinks almost as much as at the default, in a fraction of the time. */
const DEFLATE_LEVEL = 1;
/** zlib's smallest output chunk. */
const MIN_CHUNK = 64;

/**
 * The bytes of a checkpoint kept deflated, `size` of them: inflated at once into one buffer of that size (in chunks,
 * the output was gathered and copied again, which for a projection of 70 MB cost more than inflating it). Bytes
 * that do not inflate to their size are damage, named as such.
 */
function inflated(ctx: SlotContext, name: string, stored: Buffer, size: number): Buffer {
  let bytes: Buffer;
  try {
    bytes = zlib.inflateRawSync(stored, { chunkSize: Math.max(size, MIN_CHUNK) });
  } catch (error) {
    throw ctx.corrupt(new CorruptionError(`${ctx.schema}.checkpoints`, undefined, `checkpoint ${name} does not inflate`, { cause: error }));
  }
  if (bytes.byteLength !== size) {
    throw ctx.corrupt(new CorruptionError(`${ctx.schema}.checkpoints`, undefined, `checkpoint ${name} inflates to ${bytes.byteLength} bytes, not ${size}`));
  }
  return bytes;
}

/** A checkpoint saved as text; bytes that are not UTF-8 are damage. */
function decodeText(ctx: SlotContext, name: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw ctx.corrupt(new CorruptionError(`${ctx.schema}.checkpoints`, undefined, `checkpoint ${name} is not UTF-8 text`, { cause: error }));
  }
}

/**
 * The checkpoint slot of a PostgreSQL store: one row per name in the schema's `checkpoints` table, replaced by
 * one statement (atomic, and durable at its commit). The store id is read once, on first use, and kept.
 */
export function createCheckpointSlot(ctx: SlotContext): CheckpointSlot {
  let id: Promise<string> | undefined;
  const storeId = async (): Promise<string> => {
    ctx.live();
    id ??= ctx.rows<[string]>(ctx.q.storeId([])).then(([row]) => {
      if (row === undefined) throw ctx.corrupt(new CorruptionError(`${ctx.schema}.store_identity`, undefined, 'the store has no identity row'));
      return row[0];
    });
    // A failed read (a lost connection) is not kept: the next call asks again.
    id.catch(() => {
      id = undefined;
    });
    return id;
  };
  return {
    storeId,

    async load(name) {
      ctx.live();
      validateCheckpointName(name);
      const mine = await storeId();
      const [row] = await ctx.rows<[string, boolean, number | null, Buffer]>(ctx.q.loadCheckpoint([name]));
      if (row === undefined || row[0] !== mine) return undefined;
      const [, isText, size, stored] = row;
      // Inflated bytes are the caller's alone; a row's bytes may share the driver's memory, so they are copied.
      if (size !== null) {
        const bytes = inflated(ctx, name, stored, size);
        return isText ? decodeText(ctx, name, bytes) : bytes;
      }
      if (!isText) return new Uint8Array(stored);
      return decodeText(ctx, name, stored);
    },

    async save(name, data: CheckpointData) {
      ctx.writable();
      validateNewCheckpointName(name);
      validateCheckpointData(data);
      // Copied now: the caller may reuse its buffer before the statement is sent.
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
      const deflate = bytes.byteLength >= DEFLATE_FROM;
      const stored = deflate ? await deflateRaw(bytes, { level: DEFLATE_LEVEL }) : bytes;
      await ctx.rows(ctx.q.saveCheckpoint([name, await storeId(), typeof data === 'string', deflate ? bytes.byteLength : null, stored]));
    },
  };
}
