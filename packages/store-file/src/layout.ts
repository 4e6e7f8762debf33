import { isTemporaryName } from '@sessionfold/atomic-write';
import { validateCheckpointName } from '@sessionfold/core/store-kit';
import { join, resolve } from 'node:path';

/**
 * Where each file of a store lives. No path is built from a stream id: streams live inside the log, so a name
 * never becomes a file name; a checkpoint's name is validated before it does.
 */
export class Layout {
  readonly directory: string;
  /** `<dir>/log/`: the log's segments. */
  readonly log: string;
  /** `<dir>/index/`: index snapshots, so open need not read the whole log. */
  readonly index: string;
  readonly blobs: string;
  /** `<dir>/format.json`: the layout's format version. */
  readonly format: string;
  /** `<dir>/store-id.json`: the store's identity, which checkpoints are bound to. */
  readonly storeId: string;
  /** `<dir>/checkpoints/`: projection checkpoints, outside every stream. */
  readonly checkpoints: string;
  /** `<dir>/streams/`: where an earlier layout kept its journals (read only to upgrade them). */
  readonly streams: string;

  constructor(directory: string) {
    this.directory = resolve(directory);
    this.log = join(this.directory, 'log');
    this.index = join(this.directory, 'index');
    this.blobs = join(this.directory, 'blobs');
    this.format = join(this.directory, 'format.json');
    this.storeId = join(this.directory, 'store-id.json');
    this.checkpoints = join(this.directory, 'checkpoints');
    this.streams = join(this.directory, 'streams');
  }

  /** `<dir>/checkpoints/<name>` */
  checkpoint(name: string): string {
    validateCheckpointName(name);
    return join(this.checkpoints, name);
  }

  /** Leftovers of an interrupted atomic write: hidden `.<name>.<...>.tmp` siblings. */
  static isTemporary(name: string): boolean {
    return isTemporaryName(name);
  }
}
