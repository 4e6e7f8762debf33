import { appendFile, cp, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, UnsupportedFormatError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { collect, freshDir, linesOf, randomStream, segmentsOf } from './test-support.fixture.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const formatFile = (dir: string) => join(dir, 'format.json');
const formatLine = (formatVersion: number) => frameLine(JSON.stringify({ format: 'sessionfold.file-store', formatVersion }));
const formatOf = async (dir: string) => (JSON.parse((await readFile(formatFile(dir), 'utf8')).slice(65)) as { formatVersion: number }).formatVersion;

async function storeWithOneStream(): Promise<{ dir: string; stream: string }> {
  const dir = freshDir();
  const stream = randomStream();
  const store = await fileStore({ directory: dir });
  await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
  await store.close();
  return { dir, stream };
}

/** Every file under `dir` (relative path → bytes as base64): to tell that nothing was changed. */
function tree(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files[path.slice(dir.length + 1)] = readFileSync(path).toString('base64');
  }
  return files;
}

/** A copy of a store of an earlier format: 1 is release 0.1.0 (no format file), 2 the same with a format file, 3 the format-3 fixture. */
async function legacyStore(version: 1 | 2 | 3): Promise<string> {
  const dir = join(freshDir(), 'store');
  await cp(fixture(version === 3 ? 'format-3' : 'release-0.1.0'), dir, { recursive: true });
  if (version === 2) await writeFile(formatFile(dir), formatLine(2));
  return dir;
}

/** What a store shows of itself: its streams, each stream's read, and its feed. */
async function shown(dir: string, readOnly: boolean): Promise<unknown> {
  const store = await fileStore({ directory: dir, readOnly });
  try {
    const streams = await collect(store.streams());
    const reads: Record<string, unknown> = {};
    for (const { stream } of streams) {
      const read = await store.read(stream);
      reads[stream] = { revision: read.revision, snapshot: read.snapshot, events: await collect(read.events) };
    }
    return { streams, reads, feed: await collect(store.readAll()) };
  } finally {
    await store.close();
  }
}

describe('the format version of a store directory', () => {
  it('a new store records format 4 in format.json: one framed line, created 0600', async () => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    expect(await readFile(formatFile(dir), 'utf8')).toBe(formatLine(4));
    expect((await stat(formatFile(dir))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'log'))).isDirectory()).toBe(true);
  });

  it.each([1, 2, 3] as const)(
    'a store of format %i is read by a read-only view without changing anything, and upgraded to 4 by its first writer',
    async (version) => {
      const dir = await legacyStore(version);
      const before = tree(dir);
      const seen = await shown(dir, true);
      expect((seen as { streams: unknown[] }).streams.length).toBeGreaterThan(0);
      expect(tree(dir)).toEqual(before);
      await expect(stat(join(dir, 'log'))).rejects.toMatchObject({ code: 'ENOENT' });
      if (version === 1) await expect(stat(formatFile(dir))).rejects.toMatchObject({ code: 'ENOENT' });

      // The writer upgrades: the same streams, reads and feed, now from the log; the old layout's files are gone.
      expect(await shown(dir, false)).toEqual(seen);
      expect(await formatOf(dir)).toBe(4);
      expect(segmentsOf(dir).length).toBeGreaterThan(0);
      const names = await readdir(dir);
      for (const old of ['streams', 'owners', 'tombstones.jsonl', 'manifest.json', 'clean-close.json', 'blanks']) expect(names).not.toContain(old);
      expect(await shown(dir, true)).toEqual(seen);
    },
    30_000,
  );

  it('a store of a newer format is refused, by a writer and a read-only view, before anything is touched', async () => {
    const { dir } = await storeWithOneStream();
    await writeFile(formatFile(dir), formatLine(5));
    const segment = segmentsOf(dir).at(-1) as string;
    await appendFile(segment, 'a torn tail a writer of this release would cut');
    const before = tree(dir);
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedFormatError);
      expect(error).toMatchObject({ code: 'unsupported_format', file: formatFile(dir), version: 5, supported: 4 });
      expect((error as Error).message).toContain(formatFile(dir));
    }
    expect(tree(dir)).toEqual(before);
    await expect(stat(join(dir, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a damaged format file is a CorruptionError naming it', async () => {
    const { dir } = await storeWithOneStream();
    const text = await readFile(formatFile(dir), 'utf8');
    // A changed version without a matching checksum.
    await writeFile(formatFile(dir), text.replace('"formatVersion":4', '"formatVersion":5'));
    for (const readOnly of [false, true]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(error).toMatchObject({ file: formatFile(dir), line: 1 });
    }
    await writeFile(formatFile(dir), frameLine(JSON.stringify({ format: 'something.else', formatVersion: 4 })));
    await expect(fileStore({ directory: dir })).rejects.toMatchObject({ code: 'corruption', file: formatFile(dir) });
    await writeFile(formatFile(dir), '');
    await expect(fileStore({ directory: dir, readOnly: true })).rejects.toMatchObject({ code: 'corruption', file: formatFile(dir) });
  });
});

describe('event schema versions in the log', () => {
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
    const lines = linesOf(dir, stream).map((line) => line.bytes.toString('utf8'));
    const at = '"recordedAt":"2026-01-01T00:00:00.000Z"';
    expect(lines.map((line) => line.slice(65, -1))).toEqual([
      `{"stream":"${stream}","revision":1,"position":1,${at},"type":"A","more":true,"data":{"n":1}}`,
      `{"stream":"${stream}","revision":2,"position":2,${at},"type":"A","eventId":"e-2","more":true,"data":{"n":2}}`,
      `{"stream":"${stream}","revision":3,"position":3,${at},"type":"B","eventId":"e-3","schemaVersion":4,"data":{"n":3}}`,
    ]);
    for (const line of lines) expect(frameLine(line.slice(65, -1))).toBe(line);
    for (const readOnly of [false, true]) {
      const reopened = await fileStore({ directory: dir, readOnly });
      const events = (await collect((await reopened.read(stream)).events)).map((event) => [event.type, event.schemaVersion]);
      expect(events).toEqual([
        ['A', 1],
        ['A', 1],
        ['B', 4],
      ]);
      await reopened.close();
    }
  });

  it('a line with a schemaVersion that is not an integer from 1 up is a CorruptionError naming the segment and line', async () => {
    const { dir, stream } = await storeWithOneStream();
    const segment = segmentsOf(dir).at(-1) as string;
    const at = '2026-01-01T00:00:00.000Z';
    const bad = `{"stream":"${stream}","revision":2,"position":2,"recordedAt":"${at}","type":"A","schemaVersion":0,"data":2}`;
    // A whole line after it: the damage is not a torn tail a writer would cut.
    await appendFile(segment, frameLine(bad) + frameLine(eventPayload('other', 1, 3, at, 'A', undefined, false, '3')));
    for (const readOnly of [true, false]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(error).toMatchObject({ file: segment, line: 2, message: expect.stringContaining('schemaVersion') });
    }
  });

  it('events of schema versions written after an upgrade read back with them, by the writer and by a view', async () => {
    const dir = await legacyStore(1);
    const store = await fileStore({ directory: dir });
    const s = randomStream();
    await store.append(s, [{ type: 'A', data: 1, schemaVersion: 2 }], { expectedRevision: 'no_stream' });
    await store.append(s, [{ type: 'B', data: 2 }], { expectedRevision: 1 });
    await store.append(s, [{ type: 'D', data: 4, schemaVersion: 5 }], { expectedRevision: 2 });
    await store.close();
    for (const readOnly of [false, true]) {
      const reopened = await fileStore({ directory: dir, readOnly });
      const events = (await collect((await reopened.read(s)).events)).map((event) => [event.type, event.schemaVersion]);
      expect(events).toEqual([
        ['A', 2],
        ['B', 1],
        ['D', 5],
      ]);
      await reopened.close();
    }
    expect(await formatOf(dir)).toBe(4);
  });
});
