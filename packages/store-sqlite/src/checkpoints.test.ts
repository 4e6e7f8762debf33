import { CorruptionError } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

/** A file with one checkpoint saved, then `sql` run on it through a plain connection. */
async function savedThenEdited(sql: string): Promise<string> {
  const path = freshPath();
  const store = await sqliteStore({ path });
  await store.checkpoints!.save('projection', 'mine');
  await store.close();
  const raw = new Database(path);
  raw.exec(sql);
  raw.close();
  return path;
}

describe('the checkpoint slot', () => {
  it('a checkpoint row written under another store id reads as absent', async () => {
    const path = await savedThenEdited("UPDATE checkpoints SET store_id = 'elsewhere'");
    const reopened = await sqliteStore({ path });
    expect(await reopened.checkpoints!.load('projection')).toBeUndefined();
    await reopened.close();
  });

  it('damaged checkpoint data is CorruptionError naming the table and the checkpoint', async () => {
    const path = await savedThenEdited("UPDATE checkpoints SET data = 'mined'");
    const reopened = await sqliteStore({ path });
    const error = await reopened.checkpoints!.load('projection').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CorruptionError);
    expect((error as CorruptionError).message).toMatch(/checkpoints.*projection/);
    await reopened.close();
  });

  it('a database written before checkpoints existed gets its store id on first open', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    await store.close();
    const raw = new Database(path);
    raw.exec('DROP TABLE checkpoints; DROP TABLE store_identity;');
    raw.close();
    const reopened = await sqliteStore({ path });
    const id = await reopened.checkpoints!.storeId();
    await reopened.close();
    const again = await sqliteStore({ path });
    expect(await again.checkpoints!.storeId()).toBe(id);
    await again.close();
  });
});
