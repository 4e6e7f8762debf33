import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { StorageError } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { SCHEMA_VERSION } from './schema.js';
import { collect, freshPath, randomStream } from './test-support.fixture.js';

describe('a read-only SQLite store', () => {
  it('reads what a writer stored and refuses every write, leaving the database file unchanged', async () => {
    const path = freshPath();
    const writer = await sqliteStore({ path });
    const stream = randomStream();
    await writer.append(stream, [{ type: 'Noted', data: { n: 1 } }], { expectedRevision: 'no_stream' });
    await writer.close();
    const before = readFileSync(path);

    const reader = await sqliteStore({ path, readOnly: true });
    const read = await reader.read(stream);
    expect((await collect(read.events)).map((event) => event.data)).toEqual([{ n: 1 }]);
    await expect(reader.append(stream, [{ type: 'Noted', data: {} }], { expectedRevision: 1 })).rejects.toBeInstanceOf(StorageError);
    await expect(reader.putBlob(stream, new Uint8Array([1]))).rejects.toBeInstanceOf(StorageError);
    await expect(reader.deleteStream(stream, { expectedRevision: 'any' })).rejects.toBeInstanceOf(StorageError);
    await reader.close();
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('sees a writer’s later commits while both are open', async () => {
    const path = freshPath();
    const writer = await sqliteStore({ path });
    const stream = randomStream();
    await writer.append(stream, [{ type: 'Noted', data: {} }], { expectedRevision: 'no_stream' });
    const reader = await sqliteStore({ path, readOnly: true });
    await writer.append(stream, [{ type: 'Noted', data: {} }], { expectedRevision: 1 });
    expect((await reader.read(stream)).revision).toBe(2);
    await reader.close();
    await writer.close();
  });

  it('creates nothing for a missing path and says so', async () => {
    const path = freshPath();
    await expect(sqliteStore({ path, readOnly: true })).rejects.toThrow(/does not exist/);
    expect(existsSync(path)).toBe(false);
  });

  it('refuses an empty or unmigrated file without migrating it', async () => {
    const empty = freshPath();
    writeFileSync(empty, '');
    await expect(sqliteStore({ path: empty, readOnly: true })).rejects.toThrow(/schema version 0/);
    expect(readFileSync(empty).length).toBe(0);

    const bare = freshPath();
    new Database(bare).close();
    await expect(sqliteStore({ path: bare, readOnly: true })).rejects.toThrow(/open it once without readOnly/);
  });

  it('refuses a database of a newer schema', async () => {
    const path = freshPath();
    await (await sqliteStore({ path })).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    await expect(sqliteStore({ path, readOnly: true })).rejects.toThrow(/newer/);
  });
});
