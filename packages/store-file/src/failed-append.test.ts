import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

const summary = (records: { streamId: string; revision: number; position: number }[]) => records.map((r) => `${r.streamId}@${r.revision}#${r.position}`);

describe('a failed append leaves nothing reserved and never holds the feed back', () => {
  it('a clock that returns an invalid date fails that append alone; later appends are in readAll', async () => {
    let bad = false;
    const store = await fileStore({ directory: freshDir(), clock: () => (bad ? new Date(Number.NaN) : new Date()) });
    const s = randomStream();
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    bad = true;
    const failed = await store.append(s, [{ type: 'B', data: 2 }], { expectedRevision: 1 }).catch((error: unknown) => error);
    bad = false;
    const later = await store.append(s, [{ type: 'C', data: 3 }], { expectedRevision: 1 });
    expect(summary(await collect(store.readAll()))).toEqual([`${s}@1#1`, `${s}@2#2`]);
    expect(later).toEqual({ revision: 2, position: 2 });
    expect(failed).toBeInstanceOf(InvalidInputError);
    expect(String(failed)).toMatch(/clock/);
    await store.close();
  });

  it('a clock that throws fails compaction and deletion without reserving a position', async () => {
    let bad = false;
    const store = await fileStore({
      directory: freshDir(),
      clock: () => {
        if (bad) throw new Error('clock unplugged');
        return new Date();
      },
    });
    const s = randomStream();
    await store.append(
      s,
      [
        { type: 'A', data: 1 },
        { type: 'B', data: 2 },
      ],
      { expectedRevision: 'no_stream' },
    );
    bad = true;
    const compacted = await store.compact(s, { revision: 1, state: null, identity: { stream: s, schemaVersion: 1 } }).catch((error: unknown) => error);
    const deleted = await store.deleteStream(s, { expectedRevision: 2 }).catch((error: unknown) => error);
    bad = false;
    const later = await store.append(s, [{ type: 'C', data: 3 }], { expectedRevision: 2 });
    expect(summary(await collect(store.readAll()))).toEqual([`${s}@1#1`, `${s}@2#2`, `${s}@3#3`]);
    expect(later).toEqual({ revision: 3, position: 3 });
    expect(compacted).toBeInstanceOf(InvalidInputError);
    expect(deleted).toBeInstanceOf(InvalidInputError);
    await store.close();
  });
});
