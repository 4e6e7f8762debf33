import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { StorageError, type RecordedEvent } from '@sessionfold/core/kernel';
import { z } from 'zod';
import { contextOf } from '../context.js';
import { examples } from '../help.js';
import { formatChange } from '../format-change.js';
import { openStore, type OpenedStore } from '../open-store.js';
import { integerText, parseArg } from '../parse.js';
import { parseStoreUrl, type StoreLocation } from '../store-url.js';

/** How long a follower without the store's own `follow()` waits between looks at the feed. */
const POLL_INTERVAL_MS = 200;

const fromSchema = z.union([z.literal('start'), z.literal('end'), integerText(1)]);
const optionsSchema = z.object({ follow: z.boolean().default(false), from: fromSchema.optional(), lines: integerText(0).optional() });

/**
 * `tail`: the change feed as JSON lines. `--follow` keeps printing changes, including other processes' writes,
 * until interrupted; Ctrl-C ends it with exit 0.
 */
export function registerTail(program: Command): void {
  program
    .command('tail')
    .description('the change feed (every event, $snapshot and $deleted record, by position) as JSON lines')
    .option('-f, --follow', 'keep printing new changes, including those of other processes, until interrupted (Ctrl-C exits 0)')
    .option('--from <where>', 'start, end or a position (default: start)')
    .option('-n, --lines <n>', 'print only the last N changes already in the feed')
    .addHelpText(
      'after',
      examples(
        'sessionfold tail -s file:./data -n 20',
        'sessionfold tail --follow --from end -s sqlite:./sessions.db',
        'sessionfold tail --from 1500 --json | jq .type',
      ),
    )
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const options = parseArg(optionsSchema, rawOptions, 'options');
      const location = parseStoreUrl(context.storeUrl);
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      // Taken before the view opens: a write in between then shows as a change, never as nothing new.
      const seen = { fingerprint: location.kind === 'file' && options.follow ? await directoryFingerprint(location.directory) : '' };
      let opened = await openStore(location, { readOnly: true });
      try {
        const print = (change: RecordedEvent) => formatChange(context.out, change);
        let next = await startPosition(opened, options.from);
        next = await printExisting(opened, next, options.lines, print, abort.signal);
        if (!options.follow) return;
        const store = opened.store;
        if (store.follow) {
          for await (const change of store.follow({ fromPosition: next, signal: abort.signal })) {
            await print(change);
            if (abort.signal.aborted) break;
          }
          return;
        }
        while (!abort.signal.aborted) {
          await sleep(POLL_INTERVAL_MS, abort.signal);
          if (abort.signal.aborted) break;
          opened = await refreshed(opened, location, seen);
          try {
            for await (const change of opened.store.readAll({ fromPosition: next })) {
              await print(change);
              next = change.position + 1;
              if (abort.signal.aborted) break;
            }
          } catch (error) {
            // A view can find a file the writer replaced since it opened (a compaction): the next look reopens it.
            if (!(location.kind === 'file' && error instanceof StorageError && /reopen/.test(error.message))) throw error;
          }
        }
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await opened.store.close();
      }
    });
}

async function startPosition(opened: OpenedStore, from: 'start' | 'end' | number | undefined): Promise<number> {
  if (from === undefined || from === 'start') return 1;
  if (typeof from === 'number') return from;
  let head = 0;
  for await (const change of opened.store.readAll()) head = change.position;
  return head + 1;
}

/** Prints the changes already in the feed from `from` (only the last `lines` of them, if given); returns the next position. */
async function printExisting(
  opened: OpenedStore,
  from: number,
  lines: number | undefined,
  print: (change: RecordedEvent) => Promise<void>,
  signal: AbortSignal,
): Promise<number> {
  let next = from;
  if (lines === undefined) {
    for await (const change of opened.store.readAll({ fromPosition: from })) {
      await print(change);
      next = change.position + 1;
      if (signal.aborted) break;
    }
    return next;
  }
  const last: RecordedEvent[] = [];
  for await (const change of opened.store.readAll({ fromPosition: from })) {
    last.push(change);
    if (last.length > lines) last.shift();
    next = change.position + 1;
  }
  for (const change of last) await print(change);
  return next;
}

/**
 * A view that sees the latest commits. The file store's read-only view shows the directory as it was when it
 * opened, so it is opened again — but only when a file changed, since opening reads every journal; other
 * stores read the latest commits through one connection.
 */
async function refreshed(opened: OpenedStore, location: StoreLocation, seen: { fingerprint: string }): Promise<OpenedStore> {
  if (location.kind !== 'file') return opened;
  const fingerprint = await directoryFingerprint(location.directory);
  if (fingerprint === seen.fingerprint) return opened;
  const fresh = await openStore(location, { readOnly: true });
  await opened.store.close();
  seen.fingerprint = fingerprint;
  return fresh;
}

/** Names, sizes and change times of the files a write touches: equal fingerprints mean nothing was written. */
async function directoryFingerprint(directory: string): Promise<string> {
  const parts: string[] = [];
  for (const sub of ['streams', 'owners', 'blobs', '.']) {
    const dir = join(directory, sub);
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const info = await stat(join(dir, name)).catch(() => undefined);
      if (info?.isFile()) parts.push(`${sub}/${name}:${info.size}:${info.mtimeMs}`);
    }
  }
  return parts.join('\n');
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
