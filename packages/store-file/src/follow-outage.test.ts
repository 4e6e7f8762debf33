import { describe, expect, it } from 'vitest';
import type { RecordedEvent, StoreObserver } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { freshDir, randomStream } from './test-support.fixture.js';

type Interrupted = Parameters<Required<StoreObserver>['followInterrupted']>[0];

describe('follow on a read-only view through a passing failure', () => {
  it('a view that runs out of file descriptors for a while goes on following, each event once and in order', async () => {
    const directory = freshDir();
    const stream = randomStream('followed');
    const writer = await fileStore({ directory });
    // Every file the view opens fails with EMFILE while `refusing` is set.
    let refusing = false;
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        if (refusing) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
        return nodeFileSystem.open(path, flags, mode);
      },
    };
    const interrupted: Interrupted[] = [];
    let resumed = 0;
    const view = await fileStore({
      directory,
      readOnly: true,
      fs,
      observer: { followInterrupted: (outage) => void interrupted.push(outage), followResumed: () => void resumed++ },
    });
    const controller = new AbortController();
    const seen: RecordedEvent[] = [];
    let outcome: unknown = 'running';
    const following = (async () => {
      for await (const record of view.follow!({ signal: controller.signal })) seen.push(record);
    })().then(
      () => void (outcome = 'ended'),
      (error: unknown) => void (outcome = error),
    );
    const until = async (test: () => boolean, what: string) => {
      for (let tries = 0; !test(); tries++) {
        if (outcome !== 'running') throw new Error(`the follow ended before ${what}`, { cause: outcome });
        if (tries > 1000) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      await writer.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
      await until(() => seen.length === 1, 'the first event');
      refusing = true;
      await writer.append(stream, [{ type: 'B', data: 2 }], { expectedRevision: 'any' });
      await until(() => interrupted.length >= 2, 'two failed attempts');
      refusing = false;
      await writer.append(stream, [{ type: 'C', data: 3 }], { expectedRevision: 'any' });
      await until(() => seen.length === 3, 'the third event');
      expect(seen.map((r) => `${r.position}:${r.type}`)).toEqual(['1:A', '2:B', '3:C']);
      expect(interrupted.slice(0, 2).map((outage) => outage.attempts)).toEqual([1, 2]);
      expect(interrupted[0]?.error.code).toBe('storage_error');
      expect(resumed).toBe(1);
    } finally {
      refusing = false;
      controller.abort();
      await following;
      await view.close();
      await writer.close();
    }
    expect(outcome).toBe('ended');
  });
});
