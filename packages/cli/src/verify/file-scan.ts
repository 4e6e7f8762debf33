import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Progress } from '../progress.js';
import type { Findings } from './problems.js';

/** One complete framed line of a journal-like file. */
interface FramedLine {
  line: number;
  payload: unknown;
}

/**
 * Checks every file of a file store as it lies on disk, without the store's code: the framing and checksum
 * of every line, revision and position order in each journal, snapshot identities, owner records against
 * blob files, and each blob's bytes against its name. Every problem is named by file and 1-based line;
 * an unfinished last line (which the next writer cuts) is a warning.
 */
export async function scanFileStore(directory: string, findings: Findings, bar: Progress): Promise<void> {
  const name = (path: string) => relative(directory, path) || path;
  const streamsDir = join(directory, 'streams');
  const ownersDir = join(directory, 'owners');
  const blobsDir = join(directory, 'blobs');
  const streamFiles = await listFiles(streamsDir);
  const ownerFiles = await listFiles(ownersDir);
  const blobFiles = await listFiles(blobsDir);
  bar.total(streamFiles.length + ownerFiles.length + blobFiles.length + 2);

  const formatPath = join(directory, 'format.json');
  if (existsSync(formatPath)) await framedLines(formatPath, name(formatPath), findings);
  const tombstones = join(directory, 'tombstones.jsonl');
  if (existsSync(tombstones)) await framedLines(tombstones, name(tombstones), findings);
  bar.tick(2);

  const snapshotRevisions = new Map<string, number>();
  for (const file of streamFiles.filter((entry) => entry.endsWith('.snapshot.json'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.snapshot.json'.length);
    const lines = await framedLines(path, name(path), findings);
    const envelope = lines[0]?.payload as { identity?: { stream?: unknown }; revision?: unknown } | undefined;
    if (envelope !== undefined) {
      if (envelope.identity?.stream !== stream) findings.error(name(path), 1, `the snapshot's identity names stream ${JSON.stringify(envelope.identity?.stream)}, not ${stream}`);
      if (typeof envelope.revision === 'number') snapshotRevisions.set(stream, envelope.revision);
    }
    bar.tick();
  }
  for (const file of streamFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.jsonl'.length);
    await checkJournal(path, name(path), snapshotRevisions.get(stream) ?? 0, findings);
    bar.tick();
  }

  const blobNames = new Set(blobFiles.filter((entry) => /^[0-9a-f]{64}$/.test(entry)));
  for (const file of ownerFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(ownersDir, file);
    for (const { line, payload } of await framedLines(path, name(path), findings)) {
      const sha = (payload as { sha256?: unknown }).sha256;
      if (typeof sha !== 'string') findings.error(name(path), line, 'an owner record without a sha256');
      else if (!blobNames.has(sha)) findings.error(name(path), line, `the stream owns blob ${sha}, but ${name(join(blobsDir, sha))} is missing`);
    }
    bar.tick();
  }
  for (const sha of blobNames) {
    const path = join(blobsDir, sha);
    const actual = await hashFile(path);
    findings.blobs++;
    if (actual !== sha) findings.error(name(path), undefined, `the blob's bytes hash to ${actual}, not to its name`);
    bar.tick();
  }
}

async function listFiles(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory, { withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => entry.name).sort();
  } catch {
    return [];
  }
}

/**
 * The complete, intact lines of a framed file. A bad line is an error and ends the file (what follows it cannot
 * be trusted to be in order); bytes after the last newline are a torn tail: a warning.
 */
async function framedLines(path: string, file: string, findings: Findings): Promise<FramedLine[]> {
  findings.files++;
  const bytes = await readFile(path);
  const lines: FramedLine[] = [];
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start);
    line++;
    if (end < 0) {
      const rest = bytes.subarray(start);
      findings.warning(file, line, rest.every((byte) => byte === 0) ? 'NUL bytes after the last record (a torn tail; a writer cuts it on open)' : 'an unfinished last line (a torn tail; a writer cuts it on open)');
      break;
    }
    const text = bytes.subarray(start, end);
    start = end + 1;
    findings.records++;
    const space = text.indexOf(0x20);
    if (space !== 64) {
      findings.error(file, line, 'not a framed record (`sha256 payload`)');
      return lines;
    }
    const payload = text.subarray(space + 1);
    if (createHash('sha256').update(payload).digest('hex') !== text.subarray(0, space).toString('latin1')) {
      findings.error(file, line, 'checksum mismatch: the record was changed after it was written');
      return lines;
    }
    try {
      lines.push({ line, payload: JSON.parse(payload.toString('utf8')) as unknown });
    } catch {
      findings.error(file, line, 'the record is not valid JSON');
      return lines;
    }
  }
  return lines;
}

/** Checks a journal's records: revisions gap-free after the snapshot's, positions increasing, batches finished. */
async function checkJournal(path: string, file: string, snapshotRevision: number, findings: Findings): Promise<void> {
  const lines = await framedLines(path, file, findings);
  let revision: number | undefined;
  let position = 0;
  let openBatch: number | undefined;
  for (const { line, payload } of lines) {
    const event = payload as { revision?: unknown; position?: unknown; more?: unknown };
    if (typeof event.revision !== 'number' || typeof event.position !== 'number') {
      findings.error(file, line, 'an event without a revision or position');
      return;
    }
    // Events a snapshot covers may remain after a crash between writing the snapshot and rewriting the journal.
    if (event.revision <= snapshotRevision && revision === undefined) {
      position = Math.max(position, event.position);
      continue;
    }
    const expected = (revision ?? snapshotRevision) + 1;
    if (event.revision !== expected) {
      findings.error(file, line, `revision ${event.revision} where revision ${expected} was expected (a line moved, removed or duplicated)`);
      return;
    }
    if (event.position <= position) {
      findings.error(file, line, `position ${event.position} does not follow position ${position} (a line moved or duplicated)`);
      return;
    }
    revision = event.revision;
    position = event.position;
    openBatch = event.more === true ? (openBatch ?? line) : undefined;
  }
  if (openBatch !== undefined) findings.warning(file, openBatch, 'a batch whose last record never made it (a torn tail; a writer drops it on open)');
}

function hashFile(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}
