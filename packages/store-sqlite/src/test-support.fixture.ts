import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

/** Number of fast-check runs per property: moderate by default, larger with SESSIONFOLD_PROPERTY_RUNS. */
export const PROPERTY_RUNS = Number(process.env['SESSIONFOLD_PROPERTY_RUNS'] ?? 25);

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the test. */
export function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-sqlite-'));
  dirs.push(dir);
  return dir;
}

/** A fresh database path in a fresh directory. */
export function freshPath(): string {
  return join(freshDir(), 'store.db');
}

/** A random stream id with a readable prefix. */
export function randomStream(prefix = 's'): string {
  return `${prefix}-${randomUUID()}`;
}

/** Drains an async iterable into an array. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Starts a TypeScript worker from `test-workers/` in a child process running from source. */
export function startWorker(name: string, args: readonly string[]): ChildProcess {
  const file = fileURLToPath(new URL(`./test-workers/${name}.ts`, import.meta.url));
  return spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', file, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Waits for a worker to exit and returns its stdout lines; rejects with its stderr when it fails. */
export function finished(child: ChildProcess): Promise<string[]> {
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve(out.split('\n').filter((line) => line.length > 0));
      else reject(new Error(`worker exited with ${code ?? signal}: ${err}`));
    });
  });
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
