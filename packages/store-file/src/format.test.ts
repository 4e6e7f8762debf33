import { appendFile, cp, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, UnsupportedFormatError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { frameLine } from './journal-codec.js';
import { freshDir, randomStream, withoutCleanClose } from './test-support.fixture.js';

const fixture = fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url));
const formatFile = (dir: string) => join(dir, 'format.json');

async function storeWithOneStream(): Promise<{ dir: string; journal: string }> {
  const dir = freshDir();
  const stream = randomStream();
  const store = await fileStore({ directory: dir });
  await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
  await store.close();
  return { dir, journal: join(dir, 'streams', `${stream}.jsonl`) };
}

describe('the format version of a store directory', () => {
  it('a new store records its format in format.json: one framed line, created 0600', async () => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    const text = await readFile(formatFile(dir), 'utf8');
    expect(text).toBe(frameLine(JSON.stringify({ format: 'sessionfold.file-store', formatVersion: 2 })));
    expect((await stat(formatFile(dir))).mode & 0o777).toBe(0o600);
  });

  it('a store written by release 0.1.0 (no format file) gets one from its first writer, never from a read-only view', async () => {
    const dir = join(freshDir(), 'store');
    await cp(fixture, dir, { recursive: true });
    await (await fileStore({ directory: dir, readOnly: true })).close();
    await expect(stat(formatFile(dir))).rejects.toMatchObject({ code: 'ENOENT' });
    await (await fileStore({ directory: dir })).close();
    expect(JSON.parse((await readFile(formatFile(dir), 'utf8')).slice(65))).toEqual({ format: 'sessionfold.file-store', formatVersion: 2 });
  });

  it('a store of a newer format is refused, by a writer and a read-only view, before anything is touched', async () => {
    const { dir, journal } = await storeWithOneStream();
    await writeFile(formatFile(dir), frameLine(JSON.stringify({ format: 'sessionfold.file-store', formatVersion: 4 })));
    await appendFile(journal, 'a torn tail a writer of this release would cut');
    const before = await readFile(journal);
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedFormatError);
      expect(error).toMatchObject({ code: 'unsupported_format', file: formatFile(dir), version: 4, supported: 3 });
      expect((error as Error).message).toContain(formatFile(dir));
    }
    expect(await readFile(journal)).toEqual(before);
    await expect(stat(join(dir, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a damaged format file is a CorruptionError naming it', async () => {
    const { dir } = await storeWithOneStream();
    const text = await readFile(formatFile(dir), 'utf8');
    await writeFile(formatFile(dir), text.replace('"formatVersion":2', '"formatVersion":5'));
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(error).toMatchObject({ file: formatFile(dir), line: 1 });
    }
    await writeFile(formatFile(dir), frameLine(JSON.stringify({ format: 'something.else', formatVersion: 2 })));
    await expect(fileStore({ directory: dir })).rejects.toMatchObject({ code: 'corruption', file: formatFile(dir) });
  });
});

describe('event schema versions in a journal', () => {
  it('a line carries schemaVersion only when it is not 1, so lines of unversioned events keep their bytes', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const store = await fileStore({ directory: dir, clock: () => new Date('2026-01-01T00:00:00.000Z') });
    await store.append(
      stream,
      [
        { type: 'A', data: { n: 1 } },
        { type: 'A', data: { n: 2 }, schemaVersion: 1, eventId: 'e-2' },
        { type: 'B', data: { n: 3 }, schemaVersion: 4, eventId: 'e-3' },
      ],
      { expectedRevision: 'no_stream' },
    );
    await store.close();
    const lines = (await readFile(join(dir, 'streams', `${stream}.jsonl`), 'utf8')).split('\n').filter(Boolean);
    const at = '"recordedAt":"2026-01-01T00:00:00.000Z"';
    expect(lines.map((line) => line.slice(65))).toEqual([
      `{"stream":"${stream}","revision":1,"position":1,${at},"type":"A","more":true,"data":{"n":1}}`,
      `{"stream":"${stream}","revision":2,"position":2,${at},"type":"A","eventId":"e-2","more":true,"data":{"n":2}}`,
      `{"stream":"${stream}","revision":3,"position":3,${at},"type":"B","eventId":"e-3","schemaVersion":4,"data":{"n":3}}`,
    ]);
    for (const line of lines) expect(frameLine(line.slice(65))).toBe(`${line}\n`);
  });

  it('a line with a schemaVersion that is not an integer from 1 up is a CorruptionError naming the file and line', async () => {
    const { dir, journal } = await storeWithOneStream();
    const stream = journal.slice(join(dir, 'streams').length + 1, -'.jsonl'.length);
    const bad = `{"stream":"${stream}","revision":2,"position":2,"recordedAt":"2026-01-01T00:00:00.000Z","type":"A","schemaVersion":0,"data":2}`;
    await appendFile(journal, frameLine(bad));
    // Opened as after a crash: after a clean close, open takes the files as the manifest records them.
    withoutCleanClose(dir);
    const error = await fileStore({ directory: dir, readOnly: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(error).toMatchObject({ file: journal, line: 2, message: expect.stringContaining('schemaVersion') });
  });
});

describe('the format version once events carry schema versions', () => {
  const formatOf = async (dir: string) => (JSON.parse((await readFile(formatFile(dir), 'utf8')).slice(65)) as { formatVersion: number }).formatVersion;

  it('stays 2 while every event is of version 1, so the release before event versions still reads the store', async () => {
    const { dir } = await storeWithOneStream();
    const store = await fileStore({ directory: dir });
    await store.append(randomStream(), [{ type: 'A', data: 1, schemaVersion: 1 }], { expectedRevision: 'no_stream' });
    await store.close();
    expect(await formatOf(dir)).toBe(2);
  });

  it('becomes 3 before the first line with a schemaVersion is written, so an older release refuses the store instead of misreading it', async () => {
    const dir = join(freshDir(), 'store');
    await cp(fixture, dir, { recursive: true });
    const store = await fileStore({ directory: dir });
    expect(await formatOf(dir)).toBe(2);
    const [s, t] = [randomStream(), randomStream()];
    // Appends made while the format is being recorded keep their order.
    const results = await Promise.all([
      store.append(s, [{ type: 'A', data: 1, schemaVersion: 2 }], { expectedRevision: 'no_stream' }),
      store.append(s, [{ type: 'B', data: 2 }], { expectedRevision: 1 }),
      store.append(t, [{ type: 'C', data: 3 }], { expectedRevision: 'no_stream' }),
    ]);
    expect(results.map((result) => result.revision)).toEqual([1, 2, 1]);
    expect(await formatOf(dir)).toBe(3);
    await store.append(s, [{ type: 'D', data: 4, schemaVersion: 5 }], { expectedRevision: 2 });
    await store.close();
    for (const readOnly of [false, true]) {
      const reopened = await fileStore({ directory: dir, readOnly });
      const events = [];
      for await (const event of (await reopened.read(s)).events) events.push([event.type, event.schemaVersion]);
      expect(events).toEqual([
        ['A', 2],
        ['B', 1],
        ['D', 5],
      ]);
      await reopened.close();
    }
    expect(await formatOf(dir)).toBe(3);
  });
});

describe('recording the event-versions format fails', () => {
  it('fails the versioned appends that waited for it, not the others; the next versioned append records it', async () => {
    const { dir } = await storeWithOneStream();
    let failRenames = 1;
    const fs: Partial<FileSystem> = {
      rename: async (from, to) => {
        if (to === formatFile(dir) && failRenames-- > 0) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
        return nodeFileSystem.rename(from, to);
      },
    };
    const store = await fileStore({ directory: dir, fs });
    const s = randomStream();
    const [versioned, plain] = await Promise.allSettled([
      store.append(s, [{ type: 'A', data: 1, schemaVersion: 2 }], { expectedRevision: 'any' }),
      store.append(s, [{ type: 'B', data: 2 }], { expectedRevision: 'any' }),
    ]);
    expect(versioned).toMatchObject({ status: 'rejected', reason: { code: 'storage_error' } });
    expect(plain).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
    expect(JSON.parse((await readFile(formatFile(dir), 'utf8')).slice(65))).toMatchObject({ formatVersion: 2 });
    expect(await store.append(s, [{ type: 'A', data: 1, schemaVersion: 2 }], { expectedRevision: 1 })).toMatchObject({ revision: 2 });
    expect(JSON.parse((await readFile(formatFile(dir), 'utf8')).slice(65))).toMatchObject({ formatVersion: 3 });
    await store.close();
  });
});
