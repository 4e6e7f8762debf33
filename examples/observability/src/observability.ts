import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CorruptionError, openSessionHistory } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { fanOut } from './fan-out.js';
import { type Logger, logObservers } from './log-observers.js';
import { MemoryMeter, type Reading } from './memory-meter.js';
import { metricsObservers } from './metrics-observers.js';

/** What the walk-through measured, for its caller (and its test) to check. */
export interface ObservabilityResult {
  readings: ReadonlyMap<string, Readonly<Reading>>;
  /** Transcript lines written, all through the service. */
  transcriptLines: number;
  /** Whether reading the damaged session failed with `CorruptionError`, as it must. */
  damageRefused: boolean;
}

/** Transcript lines appended at once to one session: the service decides them together, the store syncs them together. */
const CONCURRENT_LINES = 60;

/**
 * Runs sessions on a file store in `directory` with a logger and metrics attached to the store and the
 * service, compacts in the background, then damages one byte of the session's last stored line and reads it
 * back; `logger` hears the log lines, the returned readings hold the metrics.
 */
export async function runObservability(directory: string, logger: Logger = console): Promise<ObservabilityResult> {
  const meter = new MemoryMeter();
  const metrics = metricsObservers(meter);
  const log = logObservers(logger);
  const storeObserver = fanOut(metrics.store, log.store);

  const store = await fileStore({ directory, observer: storeObserver });
  const history = await openSessionHistory({
    store,
    observer: fanOut(metrics.service, log.service),
    // Small numbers, so the walk-through shows a background compaction.
    compaction: { everyEvents: 20, keepEvents: 5 },
  });
  const { value: session } = await history.start({ idempotencyId: `observed-${Date.now()}`, startedAt: new Date().toISOString(), sessionType: 'conversation' });
  await Promise.all(
    Array.from({ length: CONCURRENT_LINES }, (_, i) =>
      history.appendTranscript(session.id, { role: i % 2 === 0 ? 'user-message' : 'assistant-message', text: `line ${i}` }),
    ),
  );
  const { value: command } = await history.enqueue(session.id, { idempotencyId: 'reply', kind: 'message' });
  await history.claimCommand(command.id);
  await history.completeCommand(command.id, { outcome: { sent: true } });
  await history.close();
  await store.close();

  flipOneByte(lastLineOf(directory, `session-${session.id}`));
  let damageRefused = false;
  try {
    const reopened = await fileStore({ directory, readOnly: true, observer: storeObserver });
    try {
      // Every line a read returns is checked against its checksum as it is read.
      const { events } = await reopened.read(`session-${session.id}`);
      for await (const _ of events);
    } finally {
      await reopened.close();
    }
  } catch (error) {
    damageRefused = error instanceof CorruptionError;
  }
  return { readings: meter.readings(), transcriptLines: CONCURRENT_LINES, damageRefused };
}

/** Where a line ends in a file: `end` is the offset of its newline. */
interface LineEnd {
  file: string;
  end: number;
}

/**
 * The last record of `stream` in a file store's directory: in its log segments (`log/*.jsonl`, whose lines each
 * name their stream), or, in a store of an older format, at the end of the stream's own journal.
 */
function lastLineOf(directory: string, stream: string): LineEnd {
  const log = join(directory, 'log');
  if (!existsSync(log)) {
    const file = journalOf(directory, stream);
    return { file, end: statSync(file).size - 1 };
  }
  let found: LineEnd | undefined;
  // Segment names are zero-padded positions: name order is log order.
  for (const name of readdirSync(log)
    .filter((entry) => entry.endsWith('.jsonl'))
    .sort()) {
    const file = join(log, name);
    const bytes = readFileSync(file);
    for (let start = 0, end = bytes.indexOf(NEWLINE); end >= 0; start = end + 1, end = bytes.indexOf(NEWLINE, start)) {
      // A line is `<sha256 hex> <payload>`: the payload starts after 64 digits and a space.
      const payload = JSON.parse(bytes.toString('utf8', start + 65, end)) as { stream?: unknown; position?: unknown };
      // A record of the stream (an event, snapshot or deletion), which a read of it checks; not a blob owner line.
      if (payload.stream === stream && payload.position !== undefined) found = { file, end };
    }
  }
  if (found === undefined) throw new Error(`no line of ${stream} in ${log}`);
  return found;
}

const NEWLINE = 0x0a;

/** The journal file of a stream in a store of format 1–3 (`streams/<stream>.jsonl`). */
function journalOf(directory: string, stream: string): string {
  const name = readdirSync(join(directory, 'streams')).find((file) => file.startsWith(stream) && file.endsWith('.jsonl'));
  if (name === undefined) throw new Error(`no journal of ${stream} in ${directory}`);
  return join(directory, 'streams', name);
}

/** Changes one byte inside the line ending at `end` (40 bytes before its end, within its data), as a failing disk might. */
function flipOneByte({ file, end }: LineEnd): void {
  const fd = openSync(file, 'r+');
  try {
    const at = Math.max(0, end - 40);
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, at);
    byte[0] = (byte[0] ?? 0) ^ 0x01;
    writeSync(fd, byte, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}
