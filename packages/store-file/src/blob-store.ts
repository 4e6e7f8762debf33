import { CorruptionError, StorageError, type StreamId } from '@sessionfold/core/kernel';
import { AtomicWriteDirectorySyncError, writeFileAtomic } from '@sessionfold/sessionfile/atomic';
import { atomicWriteFs, errorCode, listDir, syncDir, unlinkIfPresent, type FileSystem } from './fs-layer.js';
import { sha256Hex } from './journal-codec.js';
import { Layout } from './layout.js';
import { readRecordLog, RecordLog } from './record-log.js';

/**
 * Content-addressed blobs (`blobs/<sha256>`, written atomically, verified on read) and which streams own
 * each one (`owners/<stream>.jsonl`, one checksummed line per blob). A blob file is removed when the last
 * stream owning it is deleted.
 */
export class BlobStore {
  readonly #fs: FileSystem;
  readonly #layout: Layout;
  readonly #owners = new Map<string, Set<StreamId>>();
  readonly #owned = new Map<StreamId, { log: RecordLog; shas: Set<string> }>();
  /** Puts and owner drops run one at a time, so a blob is never removed while another stream is claiming it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(fsl: FileSystem, layout: Layout) {
    this.#fs = fsl;
    this.#layout = layout;
  }

  /** Loads every owners log (cutting torn tails when `repair` is set). */
  async load(repair: boolean): Promise<void> {
    for (const name of await listDir(this.#fs, this.#layout.owners)) {
      const stream = Layout.parseOwnersFile(name);
      if (stream === undefined) continue;
      const path = this.#layout.ownersOf(stream);
      const read = await readRecordLog(this.#fs, path, repair);
      if (!read) continue;
      const shas = new Set<string>();
      for (const record of read.records) {
        const sha = (record.value as { sha256?: unknown } | null)?.sha256;
        if (typeof sha !== 'string' || !/^[0-9a-f]{64}$/.test(sha)) throw new CorruptionError(path, record.line, 'not a blob owner record');
        shas.add(sha);
        this.#ownersOf(sha).add(stream);
      }
      this.#owned.set(stream, { log: read.log, shas });
    }
    if (!repair) return;
    // A blob is written before its owner record: a crash in between leaves a blob nobody owns (and nobody was
    // told about). Those are removed, so deleting every owner really frees every blob.
    let removed = false;
    for (const name of await listDir(this.#fs, this.#layout.blobs)) {
      if (!/^[0-9a-f]{64}$/.test(name) || this.#owners.has(name)) continue;
      removed = (await unlinkIfPresent(this.#fs, this.#layout.blob(name))) || removed;
    }
    if (removed) await syncDir(this.#fs, this.#layout.blobs);
  }

  /** Stores `bytes` for `stream` durably and returns their sha256. */
  put(stream: StreamId, bytes: Uint8Array): Promise<string> {
    return this.#serial(async () => {
      const sha = sha256Hex(bytes);
      const path = this.#layout.blob(sha);
      if (!(await this.#holds(path, sha))) {
        try {
          await writeFileAtomic(path, bytes, { mode: 0o600, fs: atomicWriteFs(this.#fs) });
        } catch (cause) {
          throw new StorageError(`Could not write blob ${path}.`, { cause, poisoned: cause instanceof AtomicWriteDirectorySyncError });
        }
      }
      let owned = this.#owned.get(stream);
      if (!owned) {
        owned = { log: new RecordLog(this.#fs, this.#layout.ownersOf(stream)), shas: new Set() };
        this.#owned.set(stream, owned);
      }
      if (!owned.shas.has(sha)) {
        await this.#fs.mkdir(this.#layout.owners, 0o700);
        await owned.log.append([JSON.stringify({ sha256: sha })]);
        owned.shas.add(sha);
        this.#ownersOf(sha).add(stream);
      }
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

  /** Forgets `stream`'s ownership (its owners log goes) and removes the blobs no other stream owns. */
  dropOwner(stream: StreamId): Promise<void> {
    return this.#serial(async () => {
      const owned = this.#owned.get(stream);
      await unlinkIfPresent(this.#fs, this.#layout.ownersOf(stream));
      this.#owned.delete(stream);
      if (!owned) return;
      let removed = false;
      for (const sha of owned.shas) {
        const owners = this.#owners.get(sha);
        owners?.delete(stream);
        if (owners && owners.size > 0) continue;
        this.#owners.delete(sha);
        removed = (await unlinkIfPresent(this.#fs, this.#layout.blob(sha))) || removed;
      }
      await syncDir(this.#fs, this.#layout.owners);
      if (removed) await syncDir(this.#fs, this.#layout.blobs);
    });
  }

  #ownersOf(sha: string): Set<StreamId> {
    let owners = this.#owners.get(sha);
    if (!owners) this.#owners.set(sha, (owners = new Set()));
    return owners;
  }

  /** Whether a verified copy is already stored (a damaged one is rewritten). */
  async #holds(path: string, sha: string): Promise<boolean> {
    try {
      return sha256Hex(await this.#fs.readFile(path)) === sha;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      throw new StorageError(`Could not read blob ${path}.`, { cause: error });
    }
  }

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}
