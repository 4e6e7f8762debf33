import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { foldStream } from '@sessionfold/core';
import type { EventStore, RecordedEvent, Snapshot } from '@sessionfold/core/kernel';
import { materialise, sessionReducer, sessionStream } from '@sessionfold/core/session';
import { afterEach, describe, expect, it } from 'vitest';
import { runQuickstart } from './quickstart.js';

/** A line of the store's log as it lies on disk. */
interface LogPayload {
  stream: string;
  revision?: number;
  position?: number;
  recordedAt?: string;
  type?: string;
  eventId?: string;
  schemaVersion?: number;
  data?: unknown;
}

/** Every line of every log segment of the store in `dir`, in log order, each checked against its sha256. */
function logPayloads(dir: string): LogPayload[] {
  const logDir = join(dir, 'log');
  const payloads: LogPayload[] = [];
  for (const segment of readdirSync(logDir)
    .filter((name) => /^\d{20}\.jsonl$/.test(name))
    .sort()) {
    for (const line of readFileSync(join(logDir, segment), 'utf8')
      .split('\n')
      .filter((text) => text !== '')) {
      const [sha, payload] = [line.slice(0, 64), line.slice(65)];
      expect(createHash('sha256').update(payload).digest('hex'), `${segment}: ${payload.slice(0, 80)}`).toBe(sha);
      payloads.push(JSON.parse(payload) as LogPayload);
    }
  }
  return payloads;
}

/** Folds one stream's lines of the log (its latest snapshot, then its events after it) with the session reducer. */
async function replay(lines: readonly LogPayload[], stream: string) {
  const records = lines.filter((line) => line.stream === stream && line.revision !== undefined);
  const last = records.findLastIndex((line) => line.type === '$snapshot');
  const snapshot = last === -1 ? undefined : (records[last]?.data as Snapshot);
  const events = records.slice(last + 1).filter((line) => line.type !== '$snapshot' && line.type !== '$deleted');
  const recorded = events.map(
    (line): RecordedEvent =>
      ({
        streamId: stream,
        revision: line.revision as number,
        position: line.position as number,
        recordedAt: line.recordedAt as string,
        type: line.type as string,
        schemaVersion: line.schemaVersion ?? 1,
        ...(line.eventId === undefined ? {} : { eventId: line.eventId }),
        data: line.data,
      }) as RecordedEvent,
  );
  // Only what the fold reads of a store: the lines from disk, without the store's code.
  const fromDisk = {
    read: async () => ({
      revision: recorded.at(-1)?.revision ?? snapshot?.revision ?? 0,
      ...(snapshot === undefined ? {} : { snapshot }),
      events: (async function* () {
        yield* recorded;
      })(),
    }),
  } as unknown as EventStore;
  const folded = await foldStream(fromDisk, stream, sessionReducer);
  const lifecycle = folded.state.record;
  if (!lifecycle) throw new Error(`the log holds no lifecycle record of ${stream}`);
  return materialise(lifecycle, folded.state);
}

describe('the quick start', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('takes a session through its life and its events in the log on disk replay to the identical record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-quickstart-'));
    dirs.push(dir);
    const lines: string[] = [];
    const result = await runQuickstart(dir, (line) => lines.push(line));

    expect(result.identical).toBe(true);
    expect(result.replayed).toEqual(result.live);
    expect(result.live.phase).toBe('ingress_in_progress');
    expect(result.live.ingressFailureCount).toBe(1);
    expect(result.live.state.transcript).toHaveLength(2);
    expect(result.completed).toEqual([result.sessionId]);
    expect(result.kept).toMatchObject({ id: result.sessionId, phase: 'complete' });
    expect(result.kept.state.transcript).toEqual(result.live.state.transcript);
    expect(lines).toHaveLength(9);
    expect(lines[6]).toMatch(/the record is identical/);
    // Completion kept the session's events in the log (no deletion), beside the catalog holding its receipt;
    // read from the segments on disk and folded, they give the record the service returns.
    const log = logPayloads(dir);
    const stream = sessionStream(result.sessionId);
    const streams = new Set(log.map((line) => line.stream));
    expect([...streams].filter((name) => name.startsWith('session-'))).toEqual([stream]);
    expect(streams).toContain('catalog');
    expect(log.filter((line) => line.stream === stream && line.type === '$deleted')).toEqual([]);
    expect(await replay(log, stream)).toEqual(result.kept);
  });

  it('a second run in the same directory adds a session and keeps the first one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-quickstart-'));
    dirs.push(dir);
    const first = await runQuickstart(dir, () => {});
    const second = await runQuickstart(dir, () => {});
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(second.completed).toEqual(expect.arrayContaining([first.sessionId, second.sessionId]));
  });
});
