import { CorruptionError, StorageError, type StreamId } from '@sessionfold/core/kernel';
import { AtomicWriteDirectorySyncError, writeFileAtomic } from '@sessionfold/atomic-write';
import { atomicWriteFs, errorCode, fullDiskReason, listDir, syncDir, unlinkIfPresent, type FileSystem } from './fs-layer.js';
import { frameLine, sha256Hex } from './journal-codec.js';
import { Layout } from './layout.js';
import { readRecordLog, RecordLog } from './record-log.js';

const SHA256_NAME = /^[0-9a-f]{64}$/;

interface Owned {
  log: RecordLog;
  shas: Set<string>;
}

/**
 * Content-addressed blobs (`blobs/<sha256>`, written atomically, verified on read) and which streams own
 * each one (`owners/<stream>.jsonl`, one checksummed line per blob). A stream's ownership is recorded before
 * its blob is written, so a crash leaves an owned blob that may be absent — dropped by the next writer's
 * open, like a torn tail — and never a present blob that nobody owns. A blob file is removed only when the
 * last stream owning it is deleted; one that nobody owns is kept and reported by `orphans`.
 */
export class BlobStore {
  readonly #fs: FileSystem;
  readonly #layout: Layout;
  readonly #owners = new Map<string, Set<StreamId>>();
  readonly #owned = new Map<StreamId, Owned>();
  /** Puts and owner drops run one at a time, so a blob is never removed while another stream is claiming it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(fsl: FileSystem, layout: Layout) {
    this.#fs = fsl;
    this.#layout = layout;
  }

  /**
   * Loads every owners log (cutting torn tails when `repair` is set). A record whose blob is absent is the
   * remnant of a put cut short: it is never listed, and with `repair` it is removed from its log, so the
   * stream cannot come to own those bytes later when another stream stores them.
   */
  async load(repair: boolean): Promise<void> {
    const present = new Set((await listDir(this.#fs, this.#layout.blobs)).filter((name) => SHA256_NAME.test(name)));
    for (const name of await listDir(this.#fs, this.#layout.owners)) {
      const stream = Layout.parseOwnersFile(name);
      if (stream === undefined) continue;
      const path = this.#layout.ownersOf(stream);
      const read = await readRecordLog(this.#fs, path, repair);
      if (!read) continue;
      const shas = new Set<string>();
      let absent = false;
      for (const record of read.records) {
        const sha = (record.value as { sha256?: unknown } | null)?.sha256;
        if (typeof sha !== 'string' || !SHA256_NAME.test(sha)) throw new CorruptionError(path, record.line, 'not a blob owner record');
        if (present.has(sha)) shas.add(sha);
        else absent = true;
      }
      const log = absent && repair ? await this.#rewriteOwners(path, shas) : read.log;
      this.#owned.set(stream, { log, shas });
      for (const sha of shas) this.#ownersOf(sha).add(stream);
    }
  }

  /** Stores `bytes` for `stream` durably and returns their sha256. */
  put(stream: StreamId, bytes: Uint8Array): Promise<string> {
    return this.#serial(async () => {
      const sha = sha256Hex(bytes);
      const owned = this.#ownedBy(stream);
      const recording = !owned.shas.has(sha);
      const length = owned.log.length;
      if (recording) {
        await this.#fs.mkdir(this.#layout.owners, 0o700);
        await owned.log.append([JSON.stringify({ sha256: sha })]);
      }
      try {
        await this.#write(sha, bytes);
      } catch (error) {
        // The blob's name may still appear (its directory sync failed): keep the record that owns it.
        if (recording && !(error instanceof StorageError && error.poisoned)) await this.#takeBack(owned.log, length, error);
        else if (recording) this.#own(stream, owned, sha);
        throw error;
      }
      if (recording) this.#own(stream, owned, sha);
      return sha;
    });
  }

  /** The blob's bytes after checking them against `sha`; undefined when there is no such blob. */
  async get(sha: string): Promise<Uint8Array | undefined> {
    const path = this.#layout.blob(sha);
    let bytes: Buffer;
    try {
      bytes = await this.#fs.readFile(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw new StorageError(`Could not read blob ${path}.`, { cause: error });
    }
    if (sha256Hex(bytes) !== sha) throw new CorruptionError(path, undefined, 'blob content does not match its sha256');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  /** The blobs `stream` owns, ascending. */
  list(stream: StreamId): string[] {
    return [...(this.#owned.get(stream)?.shas ?? [])].sort();
  }

  /** The streams that have an owners log (possibly empty). */
  owners(): StreamId[] {
    return [...this.#owned.keys()];
  }

  /** Blob files that no stream owns, ascending: never removed by the store, only reported. */
  orphans(): Promise<string[]> {
    return this.#serial(async () => {
      const names = await listDir(this.#fs, this.#layout.blobs);
      return names.filter((name) => SHA256_NAME.test(name) && !this.#owners.has(name)).sort();
    });
  }

  /** Removes the blobs only `stream` owns, then its owners log (so an interrupted delete still knows what to remove). */
  dropOwner(stream: StreamId): Promise<void> {
    return this.#serial(async () => {
      const owned = this.#owned.get(stream);
      let removed = false;
      for (const sha of owned?.shas ?? []) {
        const owners = this.#owners.get(sha);
        owners?.delete(stream);
        if (owners && owners.size > 0) continue;
        this.#owners.delete(sha);
        removed = (await unlinkIfPresent(this.#fs, this.#layout.blob(sha))) || removed;
      }
      if (removed) await syncDir(this.#fs, this.#layout.blobs);
      this.#owned.delete(stream);
      if (await unlinkIfPresent(this.#fs, this.#layout.ownersOf(stream))) await syncDir(this.#fs, this.#layout.owners);
    });
  }

  #ownedBy(stream: StreamId): Owned {
    let owned = this.#owned.get(stream);
    if (!owned) this.#owned.set(stream, (owned = { log: new RecordLog(this.#fs, this.#layout.ownersOf(stream)), shas: new Set() }));
    return owned;
  }

  #own(stream: StreamId, owned: Owned, sha: string): void {
    owned.shas.add(sha);
    this.#ownersOf(sha).add(stream);
  }

  #ownersOf(sha: string): Set<StreamId> {
    let owners = this.#owners.get(sha);
    if (!owners) this.#owners.set(sha, (owners = new Set()));
    return owners;
  }

  /** Writes the blob unless a verified copy is already stored (a damaged one is rewritten). */
  async #write(sha: string, bytes: Uint8Array): Promise<void> {
    const path = this.#layout.blob(sha);
    try {
      if (sha256Hex(await this.#fs.readFile(path)) === sha) return;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw new StorageError(`Could not read blob ${path}.`, { cause: error });
    }
    try {
      await writeFileAtomic(path, bytes, { mode: 0o600, fs: atomicWriteFs(this.#fs) });
    } catch (cause) {
      throw new StorageError(`Could not write blob ${path}${fullDiskReason(cause)}.`, { cause, poisoned: cause instanceof AtomicWriteDirectorySyncError });
    }
  }

  /**
   * Takes back an owner record whose blob could not be written: otherwise the stream would come to own those
   * bytes as soon as another stream stored them. If even that fails, the store must not write on.
   */
  async #takeBack(log: RecordLog, length: number, failure: unknown): Promise<void> {
    try {
      await log.cutBack(length);
    } catch (cause) {
      throw new StorageError(`Could not take back the last record of ${log.path} after a failed blob write; reopen the store.`, {
        cause: new AggregateError([failure, cause]),
        poisoned: true,
      });
    }
  }

  /** Rewrites an owners log with only `shas` (atomically), or removes it when none is left. */
  async #rewriteOwners(path: string, shas: ReadonlySet<string>): Promise<RecordLog> {
    try {
      if (shas.size === 0) {
        await unlinkIfPresent(this.#fs, path);
        await syncDir(this.#fs, this.#layout.owners);
        return new RecordLog(this.#fs, path);
      }
      const text = [...shas].map((sha) => frameLine(JSON.stringify({ sha256: sha }))).join('');
      await writeFileAtomic(path, text, { mode: 0o600, fs: atomicWriteFs(this.#fs) });
      return new RecordLog(this.#fs, path, Buffer.byteLength(text), true);
    } catch (cause) {
      throw new StorageError(`Could not drop the records of absent blobs from ${path}.`, { cause });
    }
  }

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}
