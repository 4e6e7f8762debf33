import { createHash } from 'node:crypto';
import { z } from 'zod';
import { readRegularFile } from '../files.js';

/** One record of a legacy control journal: `sha256hex SP {"kind","recordedAt","value"}`. */
const controlRecordSchema = z.object({ kind: z.string(), recordedAt: z.string(), value: z.unknown() });

/** A `session_command` record's value and its 1-based line. */
export interface CommandRecord {
  line: number;
  value: unknown;
}

/** What a legacy control journal holds once read: the latest lifecycle record and every command record. */
export interface ControlJournal {
  lifecycle: unknown;
  /** Every command record in file order: the latest one of an id that reads wins, as the legacy reader took them. */
  commands: CommandRecord[];
  /** The 1-based line of an unfinished last line that was dropped; undefined when the file ends whole. */
  tornTail: number | undefined;
}

/** A control journal that cannot be read: the file and 1-based line of the first bad record. */
export class LegacyJournalError extends Error {
  readonly file: string;
  readonly line: number;
  readonly reason: string;
  constructor(file: string, line: number, reason: string) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'LegacyJournalError';
    this.file = file;
    this.line = line;
    this.reason = reason;
  }
}

/**
 * Reads a legacy control journal as its service read it: an unfinished last line is a torn write and is
 * dropped; a complete line with a bad checksum or bad JSON stops the file (`LegacyJournalError`); the latest
 * `session_lifecycle` record wins. Only a regular file is read: a FIFO, a device or a symbolic link in the directory
 * is refused (a `CliError` naming it), never opened to hang or read without end.
 */
export async function readControlJournal(path: string, file: string): Promise<ControlJournal> {
  const bytes = await readRegularFile(path, 'control journal');
  let lifecycle: unknown;
  const commands: CommandRecord[] = [];
  let start = 0;
  let line = 0;
  let tornTail: number | undefined;
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start);
    line++;
    if (end < 0) {
      tornTail = line;
      break;
    }
    let text = bytes.subarray(start, end);
    start = end + 1;
    if (text[text.length - 1] === 0x0d) text = text.subarray(0, -1);
    const space = text.indexOf(0x20);
    if (space < 0) throw new LegacyJournalError(file, line, 'the record has no checksum separator');
    const payload = text.subarray(space + 1);
    if (createHash('sha256').update(payload).digest('hex') !== text.subarray(0, space).toString('latin1')) {
      throw new LegacyJournalError(file, line, 'checksum mismatch');
    }
    let parsed;
    try {
      parsed = controlRecordSchema.safeParse(JSON.parse(payload.toString('utf8')));
    } catch {
      throw new LegacyJournalError(file, line, 'the record is not valid JSON');
    }
    if (!parsed.success) throw new LegacyJournalError(file, line, 'not a control record ({kind, recordedAt, value})');
    const record = parsed.data;
    if (record.kind === 'session_lifecycle') lifecycle = record.value;
    else if (record.kind === 'session_command') commands.push({ line, value: record.value });
  }
  return { lifecycle, commands, tornTail };
}
