import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { collect, finished, freshPath, randomStream, startWorker } from './test-support.fixture.js';

const WORKERS = 4;

interface Line {
  worker: string;
  kind: string;
  stream?: string;
  round?: number;
  job?: string;
  revision?: number;
  position?: number;
  expected?: number;
  actual?: number;
  won?: boolean;
}

async function runWorkers(name: string, argsFor: (worker: string) => string[]): Promise<Line[]> {
  const barrier = randomStream('barrier');
  const outputs = await Promise.all(
    Array.from({ length: WORKERS }, (_, index) => finished(startWorker(name, [...argsFor(`w${index}`), barrier, String(WORKERS)]))),
  );
  return outputs.flat().map((line) => JSON.parse(line) as Line);
}

describe('several processes on one file', () => {
  it('racing appends with expected revisions lose no update and duplicate no revision; losers learn the actual revision', async () => {
    const path = freshPath();
    await (await sqliteStore({ path })).close();
    const streams = [randomStream('race'), randomStream('race')];
    const start = randomStream('start');
    const rounds = 60;
    const lines = await runWorkers('race', (worker) => [path, worker, streams.join(','), String(rounds), start]);

    const starts = lines.filter((line) => line.kind === 'start');
    expect(starts.filter((line) => line.won)).toHaveLength(1);
    expect(starts.filter((line) => !line.won).map((line) => line.actual)).toEqual(Array(WORKERS - 1).fill(1));

    const store = await sqliteStore({ path });
    const acks = lines.filter((line) => line.kind === 'ack');
    const conflicts = lines.filter((line) => line.kind === 'conflict');
    expect(acks.length + conflicts.length).toBe(WORKERS * rounds);
    for (const stream of streams) {
      const events = await collect((await store.read(stream)).events);
      const mine = acks.filter((ack) => ack.stream === stream).sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));
      // Gap-free, and exactly the acknowledged appends: nothing lost, nothing written twice.
      expect(events.map((event) => event.revision)).toEqual(events.map((_, index) => index + 1));
      expect(events.map((event) => ({ ...(event.data as object), revision: event.revision, position: event.position }))).toEqual(
        mine.map((ack) => ({ worker: ack.worker, round: ack.round, revision: ack.revision, position: ack.position })),
      );
      for (const conflict of conflicts.filter((line) => line.stream === stream)) {
        expect(conflict.actual).toBeGreaterThan(conflict.expected ?? Infinity);
        expect(conflict.actual).toBeLessThanOrEqual(events.length);
      }
    }
    const positions = acks.map((ack) => ack.position);
    expect(new Set(positions).size).toBe(positions.length);
    await store.close();
  });

  it('claiming jobs by appending at the revision read completes every job exactly once, by its claimer, with nothing lost', async () => {
    // The workers also race to create and migrate the file: none of them finds it there.
    const path = freshPath();
    const queues = [randomStream('queue'), randomStream('queue')];
    const jobsPerWorker = 15;
    const total = WORKERS * jobsPerWorker;
    const lines = await runWorkers('queue', (worker) => [path, worker, queues.join(','), String(jobsPerWorker), String(total)]);

    const store = await sqliteStore({ path });
    const byJob = new Map<string, { type: string; worker: string; revision: number }[]>();
    let stored = 0;
    for (const stream of queues) {
      const events = await collect((await store.read(stream)).events);
      expect(events.map((event) => event.revision)).toEqual(events.map((_, index) => index + 1));
      stored += events.length;
      for (const event of events) {
        const { job, worker } = event.data as { job: string; worker: string };
        byJob.set(job, [...(byJob.get(job) ?? []), { type: event.type, worker, revision: event.revision }]);
      }
      // Every acknowledged step is in the stream at the revision it was acknowledged with.
      for (const ack of lines.filter((line) => line.stream === stream)) {
        const event = events[(ack.revision ?? 0) - 1];
        expect(event?.type).toBe(ack.kind);
        expect(event?.data).toEqual({ job: ack.job, worker: ack.worker });
      }
    }
    expect(stored).toBe(lines.length);
    expect(byJob.size).toBe(total);
    for (const [job, steps] of byJob) {
      expect(
        steps.map((step) => step.type),
        job,
      ).toEqual(['Enqueued', 'Claimed', 'Completed']);
      expect(steps[0]?.worker).toBe(job.split('-')[0]);
      expect(steps[2]?.worker).toBe(steps[1]?.worker);
    }
    await store.close();
  });

  it('a feed reader following readAll while other processes write sees every change exactly once, in position order', async () => {
    const path = freshPath();
    await (await sqliteStore({ path })).close();
    const streams = [randomStream('feed'), randomStream('feed'), randomStream('feed')];
    const reader = await sqliteStore({ path });
    const seen: number[] = [];
    let running = true;
    const follow = (async () => {
      let next = 1;
      while (running) {
        for await (const record of reader.readAll({ fromPosition: next })) {
          seen.push(record.position);
          next = record.position + 1;
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      for await (const record of reader.readAll({ fromPosition: next })) seen.push(record.position);
    })();
    await runWorkers('race', (worker) => [path, worker, streams.join(','), '40', randomStream('start')]);
    running = false;
    await follow;
    const all = (await collect(reader.readAll())).map((record) => record.position);
    expect(all.length).toBeGreaterThan(WORKERS * 10);
    expect(seen).toEqual(all);
    await reader.close();
  });
});
