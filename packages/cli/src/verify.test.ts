import { readFileSync, readdirSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { fileDigests, populatedFileStore, populatedSqliteStore, run } from './test-support.fixture.js';

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

function sessionJournal(dir: string, sessionId: string): string {
  return join(dir, 'streams', `session-${sessionId}.jsonl`);
}

describe('verify', () => {
  it('passes a clean store of either kind with exit 0', async () => {
    for (const store of [await populatedFileStore(), await populatedSqliteStore()]) {
      const { code, report } = await verify(store.url, '--strict');
      expect(code).toBe(0);
      expect(report).toMatchObject({ ok: true, errors: 0, warnings: 0 });
    }
  });

  it('names the file and line of a flipped byte, exit 1, and writes nothing', async () => {
    const store = await populatedFileStore();
    const path = sessionJournal(store.dir, store.sessionId);
    const bytes = readFileSync(path);
    const lines = bytes.toString('utf8').split('\n');
    const offset = Buffer.byteLength(`${lines[0]}\n${lines[1]}\n`) + 80;
    bytes[offset] = (bytes[offset] as number) ^ 0x01;
    writeFileSync(path, bytes);
    const before = fileDigests(store.dir);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: `streams/session-${store.sessionId}.jsonl`, line: 3, message: expect.stringMatching(/checksum/) }),
    );
    expect(
      report.problems.filter((problem) => problem.severity === 'warning'),
      'a batch cut by the damage is no torn tail',
    ).toEqual([]);
    const human = await run(['verify', '-s', store.url]);
    expect(human.stdout).toContain(`streams/session-${store.sessionId}.jsonl:3`);
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('adds what the store checks against its own records: a journal cut at a line boundary after a clean close, exit 1, and writes nothing', async () => {
    const store = await populatedFileStore();
    const path = sessionJournal(store.dir, store.sessionId);
    const lines = readFileSync(path, 'utf8').split('\n');
    // Every line left is whole and valid: only what the store recorded of the journal tells it was longer.
    writeFileSync(path, `${lines.slice(0, 2).join('\n')}\n`);
    const before = fileDigests(store.dir);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        severity: 'error',
        file: `streams/session-${store.sessionId}.jsonl`,
        line: 3,
        message: expect.stringMatching(/^the journal holds \d+ bytes, short of/),
      }),
    );
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('a line copied from another journal is one error, on the copy, naming the stream it belongs to', async () => {
    const store = await populatedFileStore();
    const streams = readdirSync(join(store.dir, 'streams')).filter((name) => name.endsWith('.jsonl'));
    const from = streams.find((name) => name === `session-${store.sessionId}.jsonl`) as string;
    const to = streams.find((name) => name !== from) as string;
    const copied = readFileSync(join(store.dir, 'streams', from), 'utf8').split('\n')[0] as string;
    appendFileSync(join(store.dir, 'streams', to), `${copied}\n`);
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems.filter((problem) => problem.severity === 'error')).toEqual([
      expect.objectContaining({ file: `streams/${to}`, message: expect.stringMatching(/^the line names stream "session-.*": it belongs to another journal$/) }),
    ]);
  });

  it('names the line of a moved line', async () => {
    const store = await populatedFileStore();
    const path = sessionJournal(store.dir, store.sessionId);
    const lines = readFileSync(path, 'utf8').split('\n');
    [lines[1], lines[2]] = [lines[2] as string, lines[1] as string];
    writeFileSync(path, lines.join('\n'));
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ file: `streams/session-${store.sessionId}.jsonl`, line: 2, message: expect.stringMatching(/revision 3 where revision 2/) }),
    );
  });

  it('names the owner record of a missing blob', async () => {
    const store = await populatedFileStore();
    rmSync(join(store.dir, 'blobs', store.blob));
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ file: `owners/session-${store.sessionId}.jsonl`, line: 1, message: expect.stringContaining(store.blob) }),
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
    const path = sessionJournal(store.dir, store.sessionId);
    const lineCount = readFileSync(path, 'utf8').split('\n').length;
    appendFileSync(path, '0123abcd {"revision":7,"posi');
    const before = fileDigests(store.dir);
    const lenient = await verify(store.url);
    expect(lenient.code).toBe(0);
    expect(lenient.report).toMatchObject({ ok: true, errors: 0, warnings: 1 });
    expect(lenient.report.problems[0]).toMatchObject({
      severity: 'warning',
      file: `streams/session-${store.sessionId}.jsonl`,
      line: lineCount,
      message: expect.stringMatching(/torn/),
    });
    const strict = await verify(store.url, '--strict');
    expect(strict.code).toBe(1);
    expect(fileDigests(store.dir)).toEqual(before);
  });

  it('reports damage in every journal, not just the first', async () => {
    const store = await populatedFileStore();
    const damaged = readdirSync(join(store.dir, 'streams')).filter((name) => name.endsWith('.jsonl'));
    for (const name of damaged) {
      const path = join(store.dir, 'streams', name);
      writeFileSync(path, readFileSync(path, 'utf8').replace('"type":"', '"type":"X'));
    }
    const { code, report } = await verify(store.url);
    expect(code).toBe(1);
    expect(new Set(report.problems.map((problem) => problem.file)).size).toBe(damaged.length);
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
