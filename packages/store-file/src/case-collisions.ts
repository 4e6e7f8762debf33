import { InvalidInputError, type StreamId } from '@sessionfold/core/kernel';
import { join } from 'node:path';
import { errorCode, listDir, type FileSystem } from './fs-layer.js';

/**
 * On a file system that looks names up regardless of case (macOS and Windows by default) `A.jsonl` and
 * `a.jsonl` are one file, so two stream ids that differ only in case would share storage. There the store
 * keeps the spelling of every stream that has files and refuses the other spellings with `InvalidInputError`.
 * Stream ids are ASCII, so lower-casing ASCII is the whole of the comparison.
 */
export class CaseCollisions {
  /** Lower-cased id → the spelling whose files the directory holds (or is about to). */
  readonly #spellings = new Map<string, StreamId>();

  /** Records that `stream` has (or is about to have) files; refuses it if another spelling has them. */
  claim(stream: StreamId): void {
    const key = stream.toLowerCase();
    const held = this.#spellings.get(key);
    if (held === undefined) this.#spellings.set(key, stream);
    else if (held !== stream) throw collision(stream, held);
  }

  /** Refuses `stream` if another spelling has files, without claiming it. */
  check(stream: StreamId): void {
    const held = this.#spellings.get(stream.toLowerCase());
    if (held !== undefined && held !== stream) throw collision(stream, held);
  }

  /** Forgets `stream` once its files are gone: another spelling may then be used. */
  release(stream: StreamId): void {
    const key = stream.toLowerCase();
    if (this.#spellings.get(key) === stream) this.#spellings.delete(key);
  }
}

/** Subdirectories every store written by a writer has, and which the store never removes: safe to probe. */
const PROBES = ['streams', 'owners', 'blobs'];

/**
 * Whether `directory` finds a name spelled in another case: a subdirectory listed as `streams` that also
 * answers to `STREAMS`, which is not listed itself. Only reads, so a read-only view can ask too. False when
 * there is nothing to probe (no stream can be read from such a directory either).
 */
export async function isCaseInsensitive(fsl: FileSystem, directory: string): Promise<boolean> {
  const names = await listDir(fsl, directory);
  const probe = PROBES.find((name) => names.includes(name) && !names.includes(name.toUpperCase()));
  if (probe === undefined) return false;
  try {
    await fsl.lstat(join(directory, probe.toUpperCase()));
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

function collision(stream: StreamId, held: StreamId): InvalidInputError {
  return new InvalidInputError(
    'stream',
    `${JSON.stringify(stream)} differs only in case from the stream ${JSON.stringify(held)}, and this directory does not tell ` +
      'names apart by case (a case-insensitive file system): both would use the same files',
  );
}
