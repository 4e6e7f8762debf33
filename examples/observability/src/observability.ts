import { closeSync, fstatSync, openSync, readdirSync, readSync, writeSync } from 'node:fs';
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
  /** Whether reading the damaged journal failed with `CorruptionError`, as it must. */
  damageRefused: boolean;
}

/** Transcript lines appended at once to one session: the service decides them together, the store syncs them together. */
const CONCURRENT_LINES = 60;

/**
 * Runs sessions on a file store in `directory` with a logger and metrics attached to the store and the
 * service, compacts in the background, then damages one journal byte and reads it back; `logger` hears the
 * log lines, the returned readings hold the metrics.
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

  flipOneByte(journalOf(directory, session.id));
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

/** The journal file of a session in a file store's directory. */
function journalOf(directory: string, sessionId: string): string {
  const name = readdirSync(join(directory, 'streams')).find((file) => file.startsWith('session-') && file.includes(sessionId) && file.endsWith('.jsonl'));
  if (name === undefined) throw new Error(`no journal of session ${sessionId} in ${directory}`);
  return join(directory, 'streams', name);
}

/** Changes one byte inside the last record of `file`, as a failing disk might. */
function flipOneByte(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    const at = Math.max(0, fstatSync(fd).size - 40);
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, at);
    byte[0] = (byte[0] ?? 0) ^ 0x01;
    writeSync(fd, byte, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}
