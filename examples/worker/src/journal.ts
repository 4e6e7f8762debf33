import { appendFileSync, readFileSync } from 'node:fs';

/**
 * One line of the shared journal every worker appends to. `started` carries the service's own decision:
 * when the run started and until when its lease holds, as the claim returned them.
 */
export type JournalEntry =
  | { event: 'started'; command: string; worker: string; at: string; leaseUntil: string }
  | { event: 'finished'; command: string; worker: string }
  | { event: 'refused'; command: string; worker: string }
  | { event: 'lost'; command: string; worker: string };

const LINE = /^(started|finished|refused|lost) (\S+) by (\S+)(?: at (\S+) lease-until (\S+))?$/;

/** Appends one entry as one line (one `write` with O_APPEND, so lines of several processes never interleave). */
export function record(file: string, entry: JournalEntry): void {
  const tail = entry.event === 'started' ? ` at ${entry.at} lease-until ${entry.leaseUntil}` : '';
  appendFileSync(file, `${entry.event} ${entry.command} by ${entry.worker}${tail}\n`);
}

/** Every entry of the journal, in the order written. */
export function readJournal(file: string): JournalEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  // A line still being written has no newline yet: it is read on the next look.
  return text
    .split('\n')
    .slice(0, -1)
    .map((line) => {
      const match = LINE.exec(line);
      if (!match) throw new Error(`example-worker: unreadable journal line ${JSON.stringify(line)}`);
      const [, event, command = '', worker = '', at = '', leaseUntil = ''] = match;
      return event === 'started' ? { event, command, worker, at, leaseUntil } : ({ event, command, worker } as JournalEntry);
    });
}
