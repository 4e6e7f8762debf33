import { appendFile, cp, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, UnsupportedFormatError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { frameLine } from './journal-codec.js';
import { freshDir, randomStream } from './test-support.fixture.js';

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
    await writeFile(formatFile(dir), frameLine(JSON.stringify({ format: 'sessionfold.file-store', formatVersion: 3 })));
    await appendFile(journal, 'a torn tail a writer of this release would cut');
    const before = await readFile(journal);
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedFormatError);
      expect(error).toMatchObject({ code: 'unsupported_format', file: formatFile(dir), version: 3, supported: 2 });
      expect((error as Error).message).toContain(formatFile(dir));
    }
    expect(await readFile(journal)).toEqual(before);
    await expect(stat(join(dir, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a damaged format file is a CorruptionError naming it', async () => {
    const { dir } = await storeWithOneStream();
    const text = await readFile(formatFile(dir), 'utf8');
    await writeFile(formatFile(dir), text.replace('"formatVersion":2', '"formatVersion":4'));
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
    const error = await fileStore({ directory: dir, readOnly: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(error).toMatchObject({ file: journal, line: 2, message: expect.stringContaining('schemaVersion') });
  });
});
