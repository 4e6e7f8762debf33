import { basename, join } from 'node:path';
import {
  followFeed,
  StorageError,
  type ChangeSignal,
  type EventStore,
  type ObserverCall,
  type RecordedEvent,
  type StoreObserver,
} from '@sessionfold/core/kernel';
import { errorCode, listDir, type FileSystem } from './fs-layer.js';
import { Layout } from './layout.js';
import type { Manifest } from './manifest.js';

/** How often a read-only view's follow looks at the directory (one `lstat` per stream file) for the writer's changes. */
export const VIEW_POLL_MS = 50;
/**
 * How long a change stays on disk before a view's follow yields it. The writer flushes streams in parallel, so
 * a later position can reach its file before an earlier one: positions seen this long ago are taken as settled,
 * and everything up to them is yielded in order. (The writer's own follow knows exactly what has settled.)
 */
export const VIEW_SETTLE_MS = 100;
/** A temporary file younger than this is an atomic write in progress (a snapshot being replaced): wait for it. */
const FRESH_TEMPORARY_MS = 10_000;
/** Opening the writer's directory can meet a file being replaced: tries before the failure is passed on. */
const OPEN_ATTEMPTS = 3;
/** Views in a row whose read the writer cut short (by replacing a file under it) before the failure is passed on. */
const INTERRUPTED_READS = 20;

/** Error codes of failures that pass by themselves: out of file descriptors, a resource busy or interrupted for now. */
const PASSING_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);

/**
 * Whether a follower's failed read may pass when tried again: a `StorageError` that poisons nothing, caused (at
 * any depth) by a system error such as too many open files. A missing, unreadable or damaged file is not.
 */
export function transientFailure(error: unknown): error is StorageError {
  if (!(error instanceof StorageError) || error.poisoned) return false;
  for (let cause: unknown = error.cause, depth = 0; cause !== undefined && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++) {
    const code = errorCode(cause);
    if (code !== undefined && PASSING_CODES.has(code)) return true;
    if (typeof cause !== 'object' || cause === null) break;
  }
  return false;
}

/**
 * What following a directory needs: its files, a way to open a fresh read-only view of it (starting from what
 * the previous view knew, if any), the view's close signal.
 */
export interface DirectoryFollow {
  readonly fs: FileSystem;
  readonly layout: Layout;
  openView(known: Manifest | undefined): Promise<{ store: EventStore; known(): Manifest }>;
  readonly changes: ChangeSignal;
  /** The store's observer, told of a follow's outage and its end. */
  readonly observe?: ObserverCall<StoreObserver>;
}

/**
 * The follow of a read-only view, whose writer is another process. A view is a picture of the directory at its
 * open; to keep going past the writer's compactions and deletes (which a view's own `readAll` cannot show
 * whole), each read opens a fresh read-only view, reads the feed from where the follower is, and closes it.
 * Each view starts from what the previous one knew, as a writer's open starts from the manifest: files whose
 * size, inode and time are unchanged are not read, a journal that grew is read from its last checkpoint, a
 * replaced file in full. Between reads it polls the directory's files (names, sizes, times, inodes) and reads
 * again only when they changed, so a quiet directory costs one `lstat` per stream file per poll. With `keepAlive`
 * false no wait of it keeps the process alive.
 */
export function followDirectory(ctx: DirectoryFollow, fromPosition: number, signal: AbortSignal | undefined, keepAlive: boolean): AsyncIterable<RecordedEvent> {
  let lastPrint: string | undefined;
  /** Largest position each recent read saw, with when: the settled limit is the newest one older than VIEW_SETTLE_MS. */
  const seen: { at: number; max: number }[] = [];
  /** The limit of the last read: records seen above it still wait to be yielded. */
  let lastLimit = fromPosition - 1;

  /**
   * The directory's fingerprint, and the highest position a read may yield given the atomic writes in progress:
   * a snapshot being written (a fresh temporary file) has its position reserved but not yet visible, so nothing
   * from that position on is yielded until it is in place. Its position is read from the temporary's first bytes;
   * one too short to say it holds everything back.
   */
  const probe = async (): Promise<{ print: string; cap: number }> => {
    const parts: string[] = [];
    let cap = Number.MAX_SAFE_INTEGER;
    const now = Date.now();
    for (const path of [ctx.layout.tombstones, ...(await listDir(ctx.fs, ctx.layout.streams)).sort().map((name) => join(ctx.layout.streams, name))]) {
      let stats: { size: number; mtimeMs?: number; ino?: number };
      try {
        stats = (await ctx.fs.lstat(path)) as typeof stats;
      } catch (error) {
        if (errorCode(error) === 'ENOENT') continue;
        throw error;
      }
      if (Layout.isTemporary(basename(path)) && now - (stats.mtimeMs ?? 0) < FRESH_TEMPORARY_MS) cap = Math.min(cap, await reservedBy(path));
      parts.push(`${path}:${stats.size}:${stats.mtimeMs ?? ''}:${stats.ino ?? ''}`);
    }
    return { print: parts.join('\n'), cap };
  };

  /** The position a snapshot being written will take, less one (0 while its header cannot be read yet). */
  const reservedBy = async (path: string): Promise<number> => {
    let head: string;
    try {
      head = (await ctx.fs.readFile(path)).toString('utf8', 0, 1024);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return Number.MAX_SAFE_INTEGER;
      throw error;
    }
    const match = /"position":(\d+)/.exec(head);
    return match ? Number(match[1]) - 1 : 0;
  };

  const settledLimit = (now: number): number => {
    let limit = 0;
    for (const entry of seen) if (now - entry.at >= VIEW_SETTLE_MS) limit = Math.max(limit, entry.max);
    return limit;
  };

  /** What the last view knew: the next one reads only the files changed since (their tails, as after a manifest). */
  let known: Manifest | undefined;
  const openView = async (): Promise<EventStore> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const view = await ctx.openView(known);
        known = view.known();
        return view.store;
      } catch (error) {
        if (attempt >= OPEN_ATTEMPTS) throw error;
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, VIEW_POLL_MS);
          if (!keepAlive) timer.unref();
        });
      }
    }
  };

  async function* readOnce(from: number): AsyncGenerator<RecordedEvent> {
    const { print, cap } = await probe();
    lastPrint = print;
    const now = Date.now();
    const limit = Math.max(from - 1, Math.min(cap, settledLimit(now)));
    lastLimit = limit;
    let next = from;
    let max = 0;
    /** When the first view finished opening: what it read was on disk by then, and is taken as seen then. */
    let seenAt: number | undefined;
    // The writer may replace a file (a compaction) between a view's open and its read of that file: what was
    // yielded stands, and a new view reads on from there at once (a writer compacting continuously is met again).
    for (let attempt = 1; ; attempt++) {
      const view = await openView();
      seenAt ??= Date.now();
      try {
        for await (const record of view.readAll({ fromPosition: next })) {
          max = Math.max(max, record.position);
          if (record.position > limit) continue;
          next = record.position + 1;
          yield record;
        }
        break;
      } catch (error) {
        if (!(error instanceof StorageError) || error.poisoned || attempt >= INTERRUPTED_READS) throw error;
      } finally {
        await view.close();
      }
    }
    seen.push({ at: seenAt ?? now, max });
    // Entries older than the newest settled one can no longer raise the limit above what was yielded.
    while (seen.length > 1 && now - (seen[1] as { at: number }).at >= VIEW_SETTLE_MS) seen.shift();
  }

  return followFeed(
    {
      readAll: readOnce,
      changes: ctx.changes,
      pollMs: VIEW_POLL_MS,
      transient: transientFailure,
      ...(ctx.observe ? { observe: ctx.observe } : {}),
      changedElsewhere: async () => {
        // Records seen but not yet yielded are read again once they have settled, changed files or not; until
        // then a read would only open a view to yield nothing more.
        const now = Date.now();
        if (seen.some((entry) => entry.max > lastLimit && now - entry.at >= VIEW_SETTLE_MS)) return true;
        return (await probe()).print !== lastPrint;
      },
    },
    fromPosition,
    signal,
    keepAlive,
  );
}
