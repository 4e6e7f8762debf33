import { join } from 'node:path';
import { CorruptionError, type VerifyCode, type VerifyOptions, type VerifyProblem, type VerifyReport } from '@sessionfold/core/kernel';
import { isReservedName } from '@sessionfold/core/store-kit';
import { listDir, type FileSystem } from '../fs-layer.js';
import { sha256Hex } from '../journal-codec.js';
import { Layout } from '../layout.js';
import { decodeCheckpoint, readStoreId } from '../checkpoint-slot.js';
import { readStoreFormat } from '../store-format.js';
import { scanSegment } from './scan.js';
import type { Segment } from './segments.js';
import { StreamIndex } from './stream-index.js';

const SHA256_NAME = /^[0-9a-f]{64}$/;

/** The problem code for a line the scan refused, from its reason. */
function codeOf(reason: string): VerifyCode {
  if (reason.startsWith('position')) return 'position_order';
  if (reason.startsWith('revision') || reason.startsWith('a deletion')) return 'revision_gap';
  if (reason.includes('snapshot')) return 'damaged_snapshot';
  return 'damaged_record';
}

/**
 * Checks the whole log as it lies on disk with an index of its own: every line's frame and checksum, the log's
 * rules (positions, revisions, batches, snapshots), and each owned blob against its file. A problem names its
 * segment and line, and the check goes on after it; a torn tail of the last segment is a warning.
 */
export async function verifyLog(fs: FileSystem, layout: Layout, live: readonly Segment[], options?: VerifyOptions): Promise<VerifyReport> {
  const signal = options?.signal;
  signal?.throwIfAborted();
  const problems: VerifyProblem[] = [];
  const add = (severity: 'error' | 'warning', code: VerifyCode, file: string, line: number | undefined, message: string) => {
    problems.push({ severity, code, message, file, ...(line === undefined ? {} : { line }) });
  };
  for (const [path, read] of [
    [layout.format, () => readStoreFormat(fs, layout.format)],
    [layout.storeId, () => readStoreId(fs, layout)],
  ] as const) {
    try {
      await read();
    } catch (error) {
      if (error instanceof CorruptionError) add('error', 'damaged_record', error.file, error.line, error.message);
      else add('error', 'unreadable', path, undefined, `${path} could not be read: ${(error as Error).message}`);
    }
  }
  const index = new StreamIndex();
  let records = 0;
  let snapshots = 0;
  const segments = live.map((segment) => segment.reopened());
  for (let i = 0; i < segments.length; i++) {
    signal?.throwIfAborted();
    const segment = segments[i] as Segment;
    let from = { offset: 0, line: 1 };
    for (;;) {
      let result;
      try {
        result = await scanSegment(
          fs,
          segment,
          from,
          {
            batch(batch, at, line) {
              const broken = index.check(batch);
              if (broken !== undefined) return broken;
              index.apply(batch, at, { file: segment.path, line });
              records += batch.length;
              if (batch[0]?.type === '$snapshot') snapshots++;
              return undefined;
            },
            blob(record) {
              index.applyBlob(record);
              return undefined;
            },
          },
          signal,
        );
      } catch (error) {
        if (signal?.aborted && error === signal.reason) throw error;
        add('error', 'unreadable', segment.path, undefined, `${segment.path} could not be read: ${(error as Error).message}`);
        break;
      }
      const stop = result.stop;
      if (stop === undefined) {
        const written = live[i]?.size ?? 0;
        if (result.end < written) {
          add(
            'error',
            'damaged_record',
            segment.path,
            result.line,
            `${segment.path}: the file ends at byte ${result.end}, before the ${written} bytes the store wrote to it: lines were cut away`,
          );
        }
        break;
      }
      const message = `${segment.path}:${stop.damageLine}: ${stop.reason}`;
      const written = live[i]?.size ?? 0;
      if (stop.torn && stop.offset < written) {
        // Bytes the store wrote and acknowledged are no longer there: whatever the end looks like, it is not a torn write.
        add('error', 'damaged_record', segment.path, stop.damageLine, `${message}; the store wrote ${written} bytes to this segment: lines were cut away`);
        break;
      }
      if (stop.torn && i === segments.length - 1) {
        add('warning', 'torn_tail', segment.path, stop.damageLine, `${message} (a torn tail: the next writer cuts it; it was never acknowledged)`);
        break;
      }
      add('error', stop.snapshot ? 'damaged_snapshot' : codeOf(stop.reason), segment.path, stop.damageLine, message);
      from = stop.resume;
      signal?.throwIfAborted();
    }
    await segment.close(fs);
  }
  for (const gap of index.unresolvedGaps()) {
    add(
      'error',
      'revision_gap',
      gap.file,
      gap.line,
      `${gap.file}:${gap.line}: revision ${gap.revision} of ${gap.stream} does not follow revision ${gap.after}`,
    );
  }
  const blobNames = new Set((await listDir(fs, layout.blobs)).filter((name) => SHA256_NAME.test(name)));
  const owned = new Map<string, string>();
  let streams = 0;
  for (const entry of index.streams.values()) {
    if (entry.revision > 0) streams++;
    for (const sha of entry.blobs ?? []) owned.set(sha, entry.name);
  }
  for (const [sha, stream] of owned) {
    if (!blobNames.has(sha))
      add('error', 'blob_missing', join(layout.blobs, sha), undefined, `blob ${sha} is owned by ${stream} but ${join(layout.blobs, sha)} is absent`);
  }
  let blobs = 0;
  for (const sha of [...blobNames].sort()) {
    signal?.throwIfAborted();
    const path = join(layout.blobs, sha);
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(path);
    } catch (error) {
      add('error', 'unreadable', path, undefined, `${path} could not be read: ${(error as Error).message}`);
      continue;
    }
    blobs++;
    if (sha256Hex(bytes) !== sha) add('error', 'blob_hash', path, undefined, `${path}: the bytes do not match their sha256`);
    if (!owned.has(sha)) add('warning', 'blob_orphan', path, undefined, `${path} is owned by no stream (kept; remove it by hand if nothing needs it)`);
  }
  for (const name of await listDir(fs, layout.checkpoints)) {
    signal?.throwIfAborted();
    if (Layout.isTemporary(name)) continue;
    const path = join(layout.checkpoints, name);
    try {
      decodeCheckpoint(await fs.readFile(path), path);
    } catch (error) {
      if (error instanceof CorruptionError) add('error', 'damaged_record', error.file, error.line, error.message);
      else add('error', 'unreadable', path, undefined, `${path} could not be read: ${(error as Error).message}`);
    }
    if (isReservedName(name)) {
      add(
        'warning',
        'reserved_name',
        path,
        undefined,
        `${path}: checkpoint ${name} has a name Windows reserves; it still reads, but no store creates such a name any more and the directory cannot be copied to Windows (save it under another name)`,
      );
    }
  }
  signal?.throwIfAborted();
  return { ok: problems.every((problem) => problem.severity !== 'error'), problems, checked: { streams, records, snapshots, blobs } };
}
