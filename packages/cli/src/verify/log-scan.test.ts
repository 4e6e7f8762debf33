import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { holdsFileStore } from '../open-store.js';
import { scanFileStore } from './file-scan.js';
import { Findings } from './problems.js';

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');
const frame = (payload: object) => {
  const json = JSON.stringify(payload);
  return `${sha256(json)} ${json}\n`;
};
const segmentName = (position: number) => `${String(position).padStart(20, '0')}.jsonl`;
const silent = { tick: () => undefined, total: () => undefined, stop: () => undefined };
const AT = '2026-12-01T00:00:00.000Z';

/** Writes a store of format 4 by hand: framed lines in segments, each named by the next position when it began. */
class LogBuilder {
  readonly segments: { name: string; lines: string[] }[] = [];
  #position = 1;
  readonly #revisions = new Map<string, number>();

  constructor(readonly dir: string) {
    mkdirSync(join(dir, 'log'), { recursive: true });
    mkdirSync(join(dir, 'blobs'));
    writeFileSync(join(dir, 'format.json'), frame({ format: 'sessionfold.file-store', formatVersion: 4 }));
    this.segment();
  }

  /** Starts a new segment, named by the next position (or `at`). */
  segment(at = this.#position): this {
    this.segments.push({ name: segmentName(at), lines: [] });
    return this;
  }

  /** Appends a line of exactly `payload`. */
  raw(payload: object): this {
    this.segments.at(-1)?.lines.push(frame(payload));
    return this;
  }

  /** Appends `count` events to `stream`, as one batch (`more` on all but the last) when `count` > 1. */
  events(stream: string, count = 1): this {
    for (let k = 0; k < count; k++) {
      const revision = (this.#revisions.get(stream) ?? 0) + 1;
      this.#revisions.set(stream, revision);
      this.raw({ stream, revision, position: this.#position++, recordedAt: AT, type: 'Noted', ...(k < count - 1 ? { more: true } : {}), data: { k } });
    }
    return this;
  }

  /** A compaction's (or a restore's) snapshot record at `revision`. */
  snapshot(stream: string, revision: number): this {
    if (!this.#revisions.get(stream)) this.#revisions.set(stream, revision);
    const data = { revision, state: {}, identity: { stream, schemaVersion: 1 } };
    return this.raw({ stream, revision, position: this.#position++, recordedAt: AT, type: '$snapshot', data });
  }

  deleted(stream: string): this {
    const revision = this.#revisions.get(stream) ?? 0;
    this.#revisions.set(stream, 0);
    return this.raw({ stream, revision, position: this.#position++, recordedAt: AT, type: '$deleted', data: null });
  }

  /** An owner line, and (unless `file` is false) the blob's file. */
  blob(stream: string, bytes: string, file = true): string {
    const sha = sha256(bytes);
    this.raw({ stream, blob: sha });
    if (file) writeFileSync(join(this.dir, 'blobs', sha), bytes);
    return sha;
  }

  write(): this {
    for (const { name, lines } of this.segments) writeFileSync(join(this.dir, 'log', name), lines.join(''));
    return this;
  }

  /** The path of segment `index`, and its name as the scan reports it. */
  file(index: number): { path: string; name: string } {
    const name = `log/${this.segments[index]?.name}`;
    return { path: join(this.dir, name), name };
  }
}

/** Three segments, two streams, a batch, a compaction, a deletion and a restore, and a blob. */
function cleanLog(dir: string): LogBuilder {
  const log = new LogBuilder(dir);
  log.events('a', 2).events('b');
  log.blob('a', 'attachment');
  log.segment().events('a', 3).events('b').snapshot('a', 4).events('a');
  log.segment().deleted('b').snapshot('b', 7).events('b').events('a', 2);
  return log.write();
}

async function scan(dir: string): Promise<Findings> {
  const findings = new Findings();
  await scanFileStore(dir, findings, silent);
  return findings;
}

describe('scanning a store of format 4 (one log)', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-log-scan-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('finds nothing wrong with a clean log, and counts what it read', async () => {
    const dir = fresh();
    cleanLog(dir);
    const findings = await scan(dir);
    expect(findings.problems).toEqual([]);
    expect(findings).toMatchObject({ files: 4, streams: 2, blobs: 1 });
    expect(holdsFileStore(dir)).toBe(true);
    rmSync(join(dir, 'format.json'));
    expect(holdsFileStore(dir), 'the log alone marks a store').toBe(true);
  });

  it('names the segment and line of a flipped byte in a sealed segment, and only that', async () => {
    const dir = fresh();
    const { path, name } = cleanLog(dir).file(1);
    const bytes = readFileSync(path);
    const lines = bytes.toString('utf8').split('\n');
    const offset = Buffer.byteLength(`${lines[0]}\n${lines[1]}\n`) + 90;
    bytes[offset] = (bytes[offset] as number) ^ 0x01;
    writeFileSync(path, bytes);
    const findings = await scan(dir);
    expect(findings.problems).toEqual([expect.objectContaining({ severity: 'error', file: name, line: 3, message: expect.stringMatching(/checksum/) })]);
  });

  it('names a position that goes backwards', async () => {
    const dir = fresh();
    const log = cleanLog(dir);
    const { path, name } = log.file(2);
    const lines = readFileSync(path, 'utf8').split('\n');
    // Stream b's event and the first of a's batch after it: each stream's revisions still follow.
    [lines[2], lines[3]] = [lines[3] as string, lines[2] as string];
    writeFileSync(path, lines.join('\n'));
    const findings = await scan(dir);
    expect(findings.problems).toEqual([
      expect.objectContaining({ severity: 'error', file: name, line: 4, message: expect.stringMatching(/^position 12 does not follow position 13/) }),
    ]);
  });

  it('names a revision gap within an incarnation', async () => {
    const dir = fresh();
    const log = cleanLog(dir);
    const { path } = log.file(1);
    const lines = readFileSync(path, 'utf8').split('\n');
    // Stream a's revision 6, after its snapshot at 4: a's next event (in the third segment) then skips a revision
    // no snapshot or deletion covers. (A stream's first lines may be missing: cleaning removes dead ones.)
    writeFileSync(path, lines.filter((_, index) => index !== 5).join('\n'));
    const findings = await scan(dir);
    expect(findings.problems).toEqual([
      expect.objectContaining({
        severity: 'error',
        file: log.file(2).name,
        line: 4,
        message: 'revision 7 where revision 6 was expected (a line moved, removed or duplicated)',
      }),
    ]);
  });

  it('warns of an unfinished last line of the last segment, and calls one in a sealed segment an error', async () => {
    const dir = fresh();
    const log = cleanLog(dir);
    const last = log.file(2);
    appendFileSync(last.path, '0123abcd {"stream":"a","revision":9,"posi');
    const lenient = await scan(dir);
    expect(lenient.problems).toEqual([expect.objectContaining({ severity: 'warning', file: last.name, line: 6, message: expect.stringMatching(/torn/) })]);

    const sealed = log.file(1);
    appendFileSync(sealed.path, '0123abcd {"stream":"a","revision":9,"posi');
    const findings = await scan(dir);
    expect(findings.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: sealed.name, line: 7, message: expect.stringMatching(/sealed segment/) }),
    );
  });

  it('names the owner line of a missing blob a live stream owns; a deleted stream’s missing blob is fine; an unowned blob is a warning', async () => {
    const dir = fresh();
    const log = new LogBuilder(dir).events('a').events('gone');
    const owned = log.blob('a', 'kept bytes', false);
    log.blob('gone', 'dropped with its stream', false);
    log.segment().deleted('gone').events('a');
    log.write();
    const orphan = sha256('nobody owns this');
    writeFileSync(join(dir, 'blobs', orphan), 'nobody owns this');
    const findings = await scan(dir);
    expect(findings.problems).toEqual([
      expect.objectContaining({
        severity: 'error',
        file: log.file(0).name,
        line: 3,
        message: expect.stringContaining(`owns blob ${owned}, but blobs/${owned} is missing`),
      }),
      expect.objectContaining({ severity: 'warning', file: `blobs/${orphan}`, message: expect.stringMatching(/no live stream owns/) }),
    ]);
  });

  it('names a batch another stream’s record interrupts, and a snapshot that names another stream', async () => {
    const dir = fresh();
    const event = (stream: string, revision: number, position: number, more = false) => ({
      stream,
      revision,
      position,
      recordedAt: AT,
      type: 'Noted',
      ...(more ? { more } : {}),
      data: {},
    });
    const log = new LogBuilder(dir)
      .raw(event('a', 1, 1, true))
      .raw(event('b', 1, 2))
      .raw(event('a', 2, 3));
    const identity = { stream: 'z', schemaVersion: 1 };
    log.segment(4).raw({ stream: 'b', revision: 1, position: 4, recordedAt: AT, type: '$snapshot', data: { revision: 1, state: {}, identity } });
    log.write();
    const findings = await scan(dir);
    expect(findings.problems).toEqual([
      expect.objectContaining({
        file: log.file(0).name,
        line: 2,
        message: expect.stringMatching(/inside the unfinished batch of a begun at log\/\d{20}\.jsonl:1$/),
      }),
      expect.objectContaining({ file: log.file(1).name, line: 1, message: expect.stringMatching(/identity names stream "z", not b/) }),
    ]);
  });

  it('still scans a store of format 3 journal by journal', async () => {
    const dir = join(fresh(), 'store');
    cpSync(fileURLToPath(new URL('../../../store-file/src/fixtures/format-3', import.meta.url)), dir, { recursive: true });
    const findings = await scan(dir);
    expect(findings.problems.filter((problem) => problem.severity === 'error')).toEqual([]);
    expect(findings.streams).toBeGreaterThan(0);
    expect(holdsFileStore(dir)).toBe(true);
  });
});
