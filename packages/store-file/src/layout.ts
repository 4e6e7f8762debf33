import { isTemporaryName } from '@sessionfold/atomic-write';
import { validateCheckpointName, validateSha256, validateStreamId, type StreamId } from '@sessionfold/core/kernel';
import { join, resolve } from 'node:path';

const JOURNAL_SUFFIX = '.jsonl';
const SNAPSHOT_SUFFIX = '.snapshot.json';

/**
 * Where each file of a store lives. Every path built from a stream id or a sha256 validates it first, so a
 * name can never climb out of the directory (`..`, `/`) or collide with another kind of file.
 */
export class Layout {
  readonly directory: string;
  readonly streams: string;
  readonly blobs: string;
  readonly owners: string;
  readonly tombstones: string;
  /** `<dir>/format.json`: the layout's format version. */
  readonly format: string;
  /** `<dir>/store-id.json`: the store's identity, which checkpoints are bound to. */
  readonly storeId: string;
  /** `<dir>/blanks/`: empty journals made durable ahead of need (see `BlankJournals`). */
  readonly blanks: string;
  /** Where blanks are made, batch by batch in turn: `<dir>/blanks/` and `<dir>/blanks/alternate/`. */
  readonly blankDirs: readonly [string, string];
  /** `<dir>/checkpoints/`: projection checkpoints, outside every stream. */
  readonly checkpoints: string;
  /** `<dir>/manifest.json`: what the writer last knew of every stream's files, so open need not read them all. */
  readonly manifest: string;
  /** `<dir>/clean-close.json`: present only while no writer has had the store open since a clean close. */
  readonly cleanClose: string;

  constructor(directory: string) {
    this.directory = resolve(directory);
    this.streams = join(this.directory, 'streams');
    this.blobs = join(this.directory, 'blobs');
    this.owners = join(this.directory, 'owners');
    this.tombstones = join(this.directory, 'tombstones.jsonl');
    this.format = join(this.directory, 'format.json');
    this.storeId = join(this.directory, 'store-id.json');
    this.blanks = join(this.directory, 'blanks');
    this.blankDirs = [this.blanks, join(this.blanks, 'alternate')];
    this.checkpoints = join(this.directory, 'checkpoints');
    this.manifest = join(this.directory, 'manifest.json');
    this.cleanClose = join(this.directory, 'clean-close.json');
  }

  /** `<dir>/checkpoints/<name>` */
  checkpoint(name: string): string {
    validateCheckpointName(name);
    return join(this.checkpoints, name);
  }

  /** `<dir>/streams/<stream>.jsonl` */
  journal(stream: StreamId): string {
    validateStreamId(stream);
    return join(this.streams, stream + JOURNAL_SUFFIX);
  }

  /** `<dir>/streams/<stream>.snapshot.json` */
  snapshot(stream: StreamId): string {
    validateStreamId(stream);
    return join(this.streams, stream + SNAPSHOT_SUFFIX);
  }

  /** `<dir>/owners/<stream>.jsonl`: the blobs a stream owns. */
  ownersOf(stream: StreamId): string {
    validateStreamId(stream);
    return join(this.owners, stream + JOURNAL_SUFFIX);
  }

  /** `<dir>/blobs/<sha256>` */
  blob(sha256: string): string {
    validateSha256(sha256);
    return join(this.blobs, sha256);
  }

  /** Which stream file `name` (an entry of `streams/`) is, if it is one. */
  static parseStreamFile(name: string): { stream: StreamId; kind: 'journal' | 'snapshot' } | undefined {
    if (name.endsWith(SNAPSHOT_SUFFIX)) return asStream(name.slice(0, -SNAPSHOT_SUFFIX.length), 'snapshot');
    if (name.endsWith(JOURNAL_SUFFIX)) return asStream(name.slice(0, -JOURNAL_SUFFIX.length), 'journal');
    return undefined;
  }

  /** The stream an entry of `owners/` belongs to, if it is one. */
  static parseOwnersFile(name: string): StreamId | undefined {
    return name.endsWith(JOURNAL_SUFFIX) ? asStream(name.slice(0, -JOURNAL_SUFFIX.length), 'journal')?.stream : undefined;
  }

  /** Leftovers of an interrupted atomic write: hidden `.<name>.<...>.tmp` siblings. */
  static isTemporary(name: string): boolean {
    return isTemporaryName(name);
  }
}

function asStream(stream: string, kind: 'journal' | 'snapshot'): { stream: StreamId; kind: 'journal' | 'snapshot' } | undefined {
  try {
    validateStreamId(stream);
    return { stream, kind };
  } catch {
    return undefined;
  }
}
