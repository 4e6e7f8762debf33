import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { collect, freshPath, randomStream, startWorker } from './test-support.fixture.js';

const ROUNDS = Number(process.env['SESSIONFOLD_CRASH_ROUNDS'] ?? 6);

/** Collects the writer's acknowledgements and kills it with SIGKILL once it has acknowledged `killAfter` appends. */
function killAfterAcks(child: ChildProcess, killAfter: number, acked: Map<string, number>): Promise<NodeJS.Signals | null> {
  let buffered = '';
  let errors = '';
  let seen = 0;
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const { stream, revision } = JSON.parse(line) as { stream: string; revision: number };
      acked.set(stream, Math.max(acked.get(stream) ?? 0, revision));
      if (++seen === killAfter) child.kill('SIGKILL');
    }
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === null ? resolve(signal) : reject(new Error(`writer exited with ${code}: ${errors}`))));
  });
}

describe('a writer killed with SIGKILL', () => {
  it('loses no acknowledged append, round after round, with synchronous FULL and NORMAL', async () => {
    const path = freshPath();
    await (await sqliteStore({ path })).close();
    const streams = [randomStream('crash'), randomStream('crash'), randomStream('crash')];
    const acked = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const synchronous = round % 2 === 0 ? 'FULL' : 'NORMAL';
      const killAfter = 5 + Math.floor(Math.random() * 200);
      const signal = await killAfterAcks(startWorker('writer', [path, streams.join(','), synchronous]), killAfter, acked);
      expect(signal).toBe('SIGKILL');

      const store = await sqliteStore({ path });
      for (const stream of streams) {
        const events = await collect((await store.read(stream)).events);
        const context = `round ${round} (${synchronous}, killed after ${killAfter} acks), ${stream}`;
        expect(
          events.map((event) => event.revision),
          context,
        ).toEqual(events.map((_, index) => index + 1));
        expect(
          events.every((event) => (event.data as { revision: number }).revision === event.revision),
          context,
        ).toBe(true);
        expect(events.length, context).toBeGreaterThanOrEqual(acked.get(stream) ?? 0);
      }
      await store.close();
    }
    expect([...acked.values()].reduce((sum, revision) => sum + revision, 0)).toBeGreaterThan(0);
  });
});
