import { join } from 'node:path';
import { AtomicWriteDirectorySyncError, writeFileAtomic } from '@sessionfold/atomic-write';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { atomicWriteFs, errorCode, fullDiskReason, unlinkIfPresent, type FileSystem } from '../fs-layer.js';
import { sha256Hex } from '../journal-codec.js';

/** Content-addressed blob files `<dir>/blobs/<sha256>`: written atomically, checked against their name on read. */
export class BlobFiles {
  constructor(
    private readonly fs: FileSystem,
    readonly directory: string,
  ) {}

  path(sha: string): string {
    return join(this.directory, sha);
  }

  /** The blob's bytes after checking them against `sha`; undefined when there is no such file. */
  async get(sha: string): Promise<Uint8Array | undefined> {
    const path = this.path(sha);
    let bytes: Buffer;
    try {
      bytes = await this.fs.readFile(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw new StorageError(`Could not read blob ${path}.`, { cause: error });
    }
    if (sha256Hex(bytes) !== sha) throw new CorruptionError(path, undefined, 'blob content does not match its sha256');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  /** Writes the blob unless a verified copy is already there (a damaged one is written again). */
  async put(sha: string, bytes: Uint8Array): Promise<void> {
    const path = this.path(sha);
    try {
      if (sha256Hex(await this.fs.readFile(path)) === sha) return;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw new StorageError(`Could not read blob ${path}.`, { cause: error });
    }
    try {
      await this.fs.mkdir(this.directory, 0o700);
      await writeFileAtomic(path, bytes, { mode: 0o600, fs: atomicWriteFs(this.fs) });
    } catch (cause) {
      throw new StorageError(`Could not write blob ${path}${fullDiskReason(cause)}.`, { cause, poisoned: cause instanceof AtomicWriteDirectorySyncError });
    }
  }

  /** Removes the blob's file, if there is one. */
  async remove(sha: string): Promise<void> {
    await unlinkIfPresent(this.fs, this.path(sha));
  }
}
