import { appendFileSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { fileDigests, freshDir, populatedFileStore, populatedSqliteStore, run } from './test-support.fixture.js';

interface Report {
  ok: boolean;
  errors: number;
  warnings: number;
  problems: { severity: string; file: string; line?: number; message: string }[];
}

async function verify(url: string, ...flags: string[]): Promise<{ code: number; report: Report }> {
  const result = await run(['verify', '--json', '-s', url, ...flags]);
  return { code: result.code, report: JSON.parse(result.stdout) as Report };
}

/** One whole line of a log segment: its file as verify names it, 1-based line, byte offset, bytes (newline included) and payload. */
interface LogLine {
  file: string;
  path: string;
  line: number;
  offset: number;
  bytes: Buffer;
  payload: Record<string, unknown>;
}

const SEGMENT = /^\d{20}\.jsonl$/;

/** The segments of the file store in `dir`, in log order, as verify names them (`log/<20 digits>.jsonl`). */
function segmentFiles(dir: string): string[] {
  return readdirSync(join(dir, 'log'))
    .filter((name) => SEGMENT.test(name))
    .sort()
    .map((name) => `log/${name}`);
}

/** Every whole line of every segment of the file store in `dir`, in log order. */
function logLines(dir: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const file of segmentFiles(dir)) {
    const path = join(dir, file);
    const bytes = readFileSync(path);
    let line = 1;
    for (let offset = 0, end = bytes.indexOf(0x0a); end !== -1; offset = end + 1, end = bytes.indexOf(0x0a, offset), line++) {
      const payload = JSON.parse(bytes.toString('utf8', offset + 65, end)) as Record<string, unknown>;
      lines.push({ file, path, line, offset, bytes: bytes.subarray(offset, end + 1), payload });
    }
  }
  return lines;
}

/** Rewrites segment `path` with `lines` (each with its newline). */
function writeLines(path: string, lines: readonly LogLine[]): void {
  writeFileSync(path, Buffer.concat(lines.map((line) => line.bytes)));
}

/** Flips one bit of a byte inside the payload of `line`, in place on disk. */
function flipByteIn(line: LogLine): void {
  const bytes = readFileSync(line.path);
  const at = line.offset + 65 + Math.floor((line.bytes.length - 66) / 2);
  bytes[at] = (bytes[at] as number) ^ 0x01;
  writeFileSync(line.path, bytes);
}

describe('verify', () => {
  it('passes a clean store of either kind with exit 0', async () => {
    for (const store of [await populatedFileStore(), await populatedSqliteStore()]) {
      const { code, report } = await verify(store.url, '--strict');
      expect(code).toBe(0);
      expect(report).toMatchObject({ ok: true, errors: 0, warnings: 0 });
    }
  });

  it('names the segment and line of a flipped byte, exit 1, and writes nothing', async () => {
    const store = await populatedFileStore();
    const lines = logLines(store.dir);
    // The last line of a batch: the damage cuts the batch, which is no torn tail since whole lines follow it.
    const damaged = lines.find((_line, index) => index > 0 && lines[index - 1]?.payload['more'] === true && index < lines.length - 1) as LogLine;
    expect(damaged, 'the store holds a batch of several events').toBeDefined();
    flipByteIn(damaged);
    const before = fileDigests(store.dir);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: damaged.file, line: damaged.line, message: expect.stringMatching(/checksum/) }),
    );
    expect(
      report.problems.filter((problem) => problem.severity === 'warning'),
      'a batch cut by the damage is no torn tail',
    ).toEqual([]);
    const human = await run(['verify', '-s', store.url]);
    expect(human.stdout).toContain(`${damaged.file}:${damaged.line}`);
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('adds what the store checks beyond the log: a damaged checkpoint, exit 1, and writes nothing', async () => {
    const store = await populatedFileStore();
    const checkpoints = readdirSync(join(store.dir, 'checkpoints'));
    expect(checkpoints.length, 'the service saved a checkpoint').toBeGreaterThan(0);
    const name = checkpoints[0] as string;
    const path = join(store.dir, 'checkpoints', name);
    writeFileSync(path, readFileSync(path, 'utf8').replace(/"/, "'"));
    const before = fileDigests(store.dir);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toEqual([expect.objectContaining({ severity: 'error', file: `checkpoints/${name}` })]);
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('a line copied into another stream’s place in the log is one error, on the copy', async () => {
    const store = await populatedFileStore();
    const lines = logLines(store.dir);
    const session = `session-${store.sessionId}`;
    const copied = lines.find((line) => line.payload['stream'] === session) as LogLine;
    const after = lines.findIndex((line) => line.payload['stream'] === 'catalog');
    expect(after).toBeGreaterThan(lines.indexOf(copied));
    const place = lines[after] as LogLine;
    writeLines(copied.path, [...lines.slice(0, after + 1), copied, ...lines.slice(after + 1)]);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems.filter((problem) => problem.severity === 'error')).toEqual([
      expect.objectContaining({
        file: place.file,
        line: place.line + 1,
        message: expect.stringMatching(new RegExp(`^position ${copied.payload['position']} does not follow position ${place.payload['position']} `)),
      }),
    ]);
  });

  it('names the line of a moved line', async () => {
    const store = await populatedFileStore();
    const lines = logLines(store.dir);
    const session = `session-${store.sessionId}`;
    const [, second, third] = lines.filter((line) => line.payload['stream'] === session) as LogLine[];
    expect([second?.payload['revision'], third?.payload['revision']]).toEqual([2, 3]);
    const moved = lines.slice();
    [moved[lines.indexOf(second as LogLine)], moved[lines.indexOf(third as LogLine)]] = [third as LogLine, second as LogLine];
    writeLines((second as LogLine).path, moved);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ file: second?.file, line: second?.line, message: expect.stringMatching(/revision 3 where revision 2/) }),
    );
  });

  it('names the owner line of a missing blob', async () => {
    const store = await populatedFileStore();
    const owner = logLines(store.dir).find((line) => line.payload['blob'] === store.blob) as LogLine;
    expect(owner.payload['stream']).toBe(`session-${store.sessionId}`);
    rmSync(join(store.dir, 'blobs', store.blob));
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: owner.file, line: owner.line, message: expect.stringContaining(store.blob) }),
    );
  });

  it('names a blob whose bytes changed', async () => {
    const store = await populatedFileStore();
    writeFileSync(join(store.dir, 'blobs', store.blob), 'other bytes');
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(expect.objectContaining({ file: `blobs/${store.blob}` }));
  });

  it('warns of a torn tail with exit 0, and exits 1 with --strict', async () => {
    const store = await populatedFileStore();
    const last = segmentFiles(store.dir).at(-1) as string;
    const path = join(store.dir, last);
    const lineCount = readFileSync(path, 'utf8').split('\n').length;
    appendFileSync(path, `0123abcd {"stream":"session-${store.sessionId}","revision":7,"posi`);
    const before = fileDigests(store.dir);
    const lenient = await verify(store.url);
    expect(lenient.code).toBe(0);
    expect(lenient.report).toMatchObject({ ok: true, errors: 0, warnings: 1 });
    expect(lenient.report.problems[0]).toMatchObject({ severity: 'warning', file: last, line: lineCount, message: expect.stringMatching(/torn/) });
    const strict = await verify(store.url, '--strict');
    expect(strict.code).toBe(1);
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('reports damage in every segment and blob, not just the first', async () => {
    const store = await populatedFileStore();
    // Two segments: the log cut where the second session starts, the second named by its first position.
    const lines = logLines(store.dir);
    const cut = lines.findIndex((line) => line.payload['stream'] === `session-${store.completedId}`);
    const first = lines[0] as LogLine;
    const secondName = `log/${String(lines[cut]?.payload['position']).padStart(20, '0')}.jsonl`;
    writeLines(first.path, lines.slice(0, cut));
    writeLines(join(store.dir, secondName), lines.slice(cut));
    rmSync(join(store.dir, 'index'), { recursive: true, force: true });
    expect(segmentFiles(store.dir)).toEqual([first.file, secondName]);
    expect(await verify(store.url, '--strict'), 'the log in two segments is whole').toMatchObject({ code: 0, report: { ok: true } });

    for (const file of segmentFiles(store.dir)) {
      const path = join(store.dir, file);
      writeFileSync(path, readFileSync(path, 'utf8').replace('"type":"', '"type":"X'));
    }
    writeFileSync(join(store.dir, 'blobs', store.blob), 'other bytes');
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(new Set(report.problems.filter((problem) => problem.severity === 'error').map((problem) => problem.file))).toEqual(
      new Set([first.file, secondName, `blobs/${store.blob}`]),
    );
  });

  it('still checks a store of format 3 journal by journal, and leaves it in format 3', async () => {
    const dir = join(freshDir(), 'store');
    cpSync(fileURLToPath(new URL('../../store-file/src/fixtures/format-3', import.meta.url)), dir, { recursive: true });
    const journal = readdirSync(join(dir, 'streams')).find((name) => name.startsWith('session-') && name.endsWith('.jsonl')) as string;
    const path = join(dir, 'streams', journal);
    const bytes = readFileSync(path);
    const lines = bytes.toString('utf8').split('\n');
    const offset = Buffer.byteLength(`${lines[0]}\n${lines[1]}\n`) + 80;
    bytes[offset] = (bytes[offset] as number) ^ 0x01;
    writeFileSync(path, bytes);
    const format = readFileSync(join(dir, 'format.json'), 'utf8');
    expect(format).toContain('"formatVersion":3');
    const before = fileDigests(dir);
    const { code, report } = await verify(`file:${dir}`);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: `streams/${journal}`, line: 3, message: expect.stringMatching(/checksum/) }),
    );
    expect(readFileSync(join(dir, 'format.json'), 'utf8'), 'a read-only command does not upgrade the store').toBe(format);
    expect(existsSync(join(dir, 'log'))).toBe(false);
    expect(fileDigests(dir)).toEqual(before);
  });
});

describe('verify on a SQLite store', () => {
  it('names the table and blob of damaged bytes and the stream of an unreadable event, exit 1, writing nothing', async () => {
    const store = await populatedSqliteStore();
    const raw = new Database(store.path);
    raw.prepare("UPDATE blobs SET bytes = X'00'").run();
    raw.prepare('UPDATE events SET data = ? WHERE stream = ? AND revision = 2 AND kind = 0').run('{not json', `session-${store.sessionId}`);
    raw.close();
    const before = fileDigests(store.dir);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', message: expect.stringMatching(new RegExp(`table blobs.*${store.blob}`)) }),
    );
    expect(report.problems).toContainEqual(expect.objectContaining({ severity: 'error', message: expect.stringContaining(`session-${store.sessionId}`) }));
    expect(fileDigests(store.dir)).toEqual(before);
  });
});
