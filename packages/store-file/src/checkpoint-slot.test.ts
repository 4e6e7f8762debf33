import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, logLines } from './test-support.fixture.js';

describe('the checkpoint slot', () => {
  it('lives in checkpoints/, outside the log, and a new store has its id from creation', async () => {
    const directory = freshDir();
    const store = await fileStore({ directory });
    expect(readdirSync(directory)).toContain('store-id.json');
    await store.checkpoints!.save('projection', '{"at":1}');
    expect(readdirSync(join(directory, 'checkpoints'))).toEqual(['projection']);
    // No stream, no feed record and no line of the log comes of a checkpoint.
    expect(logLines(directory)).toEqual([]);
    expect(await collect(store.streams())).toEqual([]);
    expect(await collect(store.readAll())).toEqual([]);
    expect((await store.status!()).lastPosition).toBe(0);
    await store.close();
    const reopened = await fileStore({ directory, readOnly: true });
    expect(await reopened.checkpoints!.load('projection')).toBe('{"at":1}');
    expect(await collect(reopened.streams())).toEqual([]);
    await reopened.close();
  });

  it('a checkpoint file copied from another store reads as absent', async () => {
    const [here, there] = [freshDir(), freshDir()];
    const other = await fileStore({ directory: there });
    await other.checkpoints!.save('projection', 'theirs');
    await other.close();
    const store = await fileStore({ directory: here });
    await store.checkpoints!.save('projection', 'mine');
    copyFileSync(join(there, 'checkpoints', 'projection'), join(here, 'checkpoints', 'projection'));
    expect(await store.checkpoints!.load('projection')).toBeUndefined();
    await store.close();
  });

  it('a damaged checkpoint is CorruptionError naming its file', async () => {
    const directory = freshDir();
    const store = await fileStore({ directory });
    await store.checkpoints!.save('projection', new Uint8Array(1000).fill(7));
    const path = join(directory, 'checkpoints', 'projection');
    const bytes = readFileSync(path);
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 0xff;
    writeFileSync(path, bytes);
    const error = await store.checkpoints!.load('projection').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CorruptionError);
    expect((error as CorruptionError).file).toBe(path);
    const report = await store.verify!();
    // verify checks checkpoints as well as the log: the damage is its one problem.
    expect(report.problems.map((p) => [p.severity, p.code, p.file])).toEqual([['error', 'damaged_record', path]]);
    expect(report.ok).toBe(false);
    await store.close();
  });

  it('a read-only view loads checkpoints and the id, and refuses to save', async () => {
    const directory = freshDir();
    const writer = await fileStore({ directory });
    await writer.checkpoints!.save('projection', 'saved');
    const view = await fileStore({ directory, readOnly: true });
    expect(await view.checkpoints!.load('projection')).toBe('saved');
    expect(await view.checkpoints!.storeId()).toBe(await writer.checkpoints!.storeId());
    await expect(view.checkpoints!.save('projection', 'x')).rejects.toBeInstanceOf(StorageError);
    await view.close();
    await writer.close();
  });
});
