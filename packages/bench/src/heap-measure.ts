import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StoreSubject } from './stores.js';

/** One open of a store: the heap in use once it is open (after garbage collection) and how long the open took. */
export interface OpenHeap {
  heapMb: number;
  openMs: number;
  /** Whether a full garbage collection ran before the heap was read (`--expose-gc`), or only a few turns passed. */
  collected: boolean;
}

/** A few turns of the event loop, with a full collection after each where `--expose-gc` allows it. */
async function settle(): Promise<boolean> {
  const collect = (globalThis as { gc?: () => void }).gc;
  for (let turn = 0; turn < 3; turn++) {
    await new Promise((resolve) => setImmediate(resolve));
    collect?.();
  }
  return collect !== undefined;
}

/** Opens the store kept in `dir`, reads the heap in use once garbage is collected, and closes it. */
export async function measureOpenHeap(subject: StoreSubject, dir: string): Promise<OpenHeap> {
  await settle();
  const start = performance.now();
  const store = await subject.open(dir);
  const openMs = performance.now() - start;
  try {
    const collected = await settle();
    return { heapMb: process.memoryUsage().heapUsed / 2 ** 20, openMs, collected };
  } finally {
    await store.close();
  }
}

/** The task handed to the child process. */
export interface HeapTask {
  subject: string;
  dir: string;
}

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * `measureOpenHeap` in a fresh child process run with `--expose-gc` (and this process's loader flags), so the
 * heap holds the open store and the modules it loaded, not what this process wrote.
 */
export function measureOpenHeapInChild(subject: StoreSubject, dir: string): Promise<OpenHeap> {
  const task: HeapTask = { subject: subject.name, dir };
  const child = fork(fileURLToPath(new URL(`./heap-child${extension}`, import.meta.url)), [JSON.stringify(task)], {
    execArgv: [...process.execArgv, '--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let answered = false;
    child.once('message', (message: { result?: OpenHeap; error?: string }) => {
      answered = true;
      if (message.result) resolve(message.result);
      else reject(new Error(message.error ?? 'bench: the heap child sent nothing'));
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!answered) reject(new Error(`bench: the heap child exited with code ${code}`));
    });
  });
}
