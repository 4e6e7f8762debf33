import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EventStore } from '@sessionfold/core';
import { emptyRecord, foldData } from './fixtures.js';
import { RssTracker } from './stats.js';
import type { StoreSubject } from './stores.js';

/** What is read: one stream folded to a record, or the whole change feed. */
export type ReadMode = { kind: 'replay'; stream: string } | { kind: 'readAll' };

/** A timed read: events folded, elapsed ms, peak RSS growth over the baseline taken just before. */
export interface ReadResult {
  events: number;
  ms: number;
  rssGrowthMb: number;
}

/** Reads `mode` from an open store, folding every event, sampling RSS every 4,096 events. */
export async function measureRead(store: EventStore, mode: ReadMode): Promise<ReadResult> {
  const rss = new RssTracker();
  const record = emptyRecord();
  let events = 0;
  const start = performance.now();
  const source = mode.kind === 'replay' ? (await store.read(mode.stream)).events : store.readAll();
  for await (const event of source) {
    foldData(record, event.data, event.revision);
    if (++events % 4096 === 0) rss.sample();
  }
  const ms = performance.now() - start;
  rss.sample();
  return { events, ms, rssGrowthMb: rss.growthMb };
}

/** The task handed to the child process. */
export interface ChildTask {
  subject: string;
  dir: string;
  mode: ReadMode;
}

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/**
 * Opens the store in a fresh child process and measures the read there, so peak RSS belongs to the read alone
 * and not to the process that wrote the data. The child runs with this process's loader flags.
 */
export function measureReadInChild(subject: StoreSubject, dir: string, mode: ReadMode): Promise<ReadResult> {
  const task: ChildTask = { subject: subject.name, dir, mode };
  const child = fork(fileURLToPath(new URL(`./read-child${extension}`, import.meta.url)), [JSON.stringify(task)], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let answered = false;
    child.once('message', (message: { result?: ReadResult; error?: string }) => {
      answered = true;
      if (message.result) resolve(message.result);
      else reject(new Error(message.error ?? 'bench: the read child sent nothing'));
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!answered) reject(new Error(`bench: the read child exited with code ${code}`));
    });
  });
}
