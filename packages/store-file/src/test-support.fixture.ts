import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import type { EventStore, RecordedEvent, StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem } from './fs-layer.js';
import { fileStore, type FileStoreOptions, type FileSystem } from './index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the test. */
export function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-file-'));
  dirs.push(dir);
  return dir;
}

/** A random stream id with a readable prefix. */
export function randomStream(prefix = 's'): StreamId {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/** Drains an async iterable into an array. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Every event of a stream (after its snapshot, if any). */
export async function eventsOf(store: EventStore, stream: StreamId): Promise<RecordedEvent[]> {
  return collect((await store.read(stream)).events);
}

/**
 * Starts a child from `test-children/` running TypeScript from source; stdin stays open for commands. The
 * store imports only the kernel of core and the atomic writer, so a child starts quickly.
 */
export function startChild(name: string, args: readonly string[]): ChildProcess {
  const file = fileURLToPath(new URL(`./test-children/${name}.ts`, import.meta.url));
  return spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', file, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Collects a child's output as lines, with a way to wait for a line matching a pattern. */
export class ChildOutput {
  readonly lines: string[] = [];
  stderr = '';
  #buffer = '';
  #waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly child: ChildProcess) {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.#buffer += chunk;
      const parts = this.#buffer.split('\n');
      this.#buffer = parts.pop() ?? '';
      for (const line of parts) {
        this.lines.push(line);
        this.#waiters = this.#waiters.filter((waiter) => (waiter.test(line) ? (waiter.resolve(line), false) : true));
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Resolves with the first line (already seen or future) matching `test`; rejects if the child exits first. */
  waitFor(test: (line: string) => boolean): Promise<string> {
    const seen = this.lines.find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.#waiters.push({ test, resolve });
      void this.exited.then(({ code, signal }) => reject(new Error(`child exited (${code ?? signal}) before the line: ${this.stderr}`)));
    });
  }

  /** Kills the child with SIGKILL and waits until it is gone (its pipe drained). */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
    await new Promise<void>((resolve) => (this.child.stdout?.readableEnded ? resolve() : this.child.stdout?.once('close', () => resolve())));
  }
}

/** A seeded pseudo-random generator (mulberry32), so a failing run can be repeated from its printed seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Keeps `depth` children loading ahead of use: loading TypeScript dominates a child's life, so with a few
 * started early the kill loop is not held up by start-up (each waits for `go` before touching the store).
 */
export class ChildPool {
  readonly #ready: ChildOutput[] = [];
  constructor(
    readonly make: () => ChildOutput,
    readonly depth: number,
  ) {
    for (let i = 0; i < depth; i++) this.#ready.push(make());
  }

  /** The oldest pre-started child; a new one starts loading in its place. */
  take(): ChildOutput {
    this.#ready.push(this.make());
    return this.#ready.shift() as ChildOutput;
  }

  /** Kills the children never used. */
  async dispose(): Promise<void> {
    await Promise.all(this.#ready.splice(0).map((child) => child.kill()));
  }
}

/** What opening a store with `options` rejected with, or undefined when it opened (it is closed again). */
export async function openFailure(options: FileStoreOptions): Promise<unknown> {
  return fileStore(options).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (error: unknown) => error,
  );
}

/**
 * Removes the index snapshots of the store in `dir`, as if no writer had saved one: the next open then reads and
 * checks the whole log. For tests that change a segment by hand to stand for damage that open must find (with a
 * snapshot, open reads only the log after it, and the damage is found by the read that meets it).
 */
export function withoutIndexSnapshots(dir: string): void {
  rmSync(join(dir, 'index'), { recursive: true, force: true });
}

/**
 * `open` and `close` of the real file system that note which descriptors are the log directory's, so a test can
 * fail or hold the fsync that makes a new segment's name durable.
 */
export function logDirDescriptors(dir: string): { isLogDir(fd: number): boolean; open: FileSystem['open']; close: FileSystem['close'] } {
  const fds = new Set<number>();
  return {
    isLogDir: (fd) => fds.has(fd),
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (path === join(dir, 'log')) fds.add(fd);
      return fd;
    },
    close: async (fd) => {
      fds.delete(fd);
      await nodeFileSystem.close(fd);
    },
  };
}

/** The segment files of the store in `dir`, in log order (full paths). */
export function segmentsOf(dir: string): string[] {
  const log = join(dir, 'log');
  return readdirSync(log)
    .filter((name) => /^\d{20}\.jsonl$/.test(name))
    .sort()
    .map((name) => join(log, name));
}

/** One line of a segment: its file, 1-based line number, byte offset, bytes (newline included) and parsed payload. */
export interface SegmentLine {
  path: string;
  line: number;
  offset: number;
  bytes: Buffer;
  payload: Record<string, unknown>;
}

/** Every whole line of every segment of the store in `dir`, in log order, with where it lies. */
export function logLines(dir: string): SegmentLine[] {
  const lines: SegmentLine[] = [];
  for (const path of segmentsOf(dir)) {
    const bytes = readFileSync(path);
    let offset = 0;
    let line = 1;
    for (let end = bytes.indexOf(0x0a); end !== -1; offset = end + 1, end = bytes.indexOf(0x0a, offset), line++) {
      const text = bytes.toString('utf8', offset + 65, end);
      lines.push({ path, line, offset, bytes: bytes.subarray(offset, end + 1), payload: JSON.parse(text) as Record<string, unknown> });
    }
  }
  return lines;
}

/** The lines of the store in `dir` that belong to `stream` (events, `$snapshot`, `$deleted` and blob-owner lines). */
export function linesOf(dir: string, stream: StreamId): SegmentLine[] {
  return logLines(dir).filter((line) => line.payload.stream === stream);
}

/**
 * `value` with only the members `released` has, at every depth: what a reader of release 0.1.0 saw of it. Later
 * releases add members to records (`data`, `lastActivityAt`, the view's `commands` and `objects`) and never change
 * the ones it had; an element or member missing from `value` still shows as a difference.
 */
export function asReleased(value: unknown, released: unknown): unknown {
  if (Array.isArray(released) && Array.isArray(value)) return value.map((item, index) => asReleased(item, released[index]));
  if (isPlainObject(released) && isPlainObject(value)) {
    return Object.fromEntries(
      Object.keys(released)
        .filter((key) => Object.hasOwn(value, key))
        .map((key) => [key, asReleased(value[key], released[key])]),
    );
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
