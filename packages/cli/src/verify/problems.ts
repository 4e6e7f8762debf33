import type { VerifyProblem } from '../open-store.js';

/** `message` without the `file:line: ` (or `file: `) it starts with, since a report names the place once. */
export function withoutPlace(message: string, file: string): string {
  if (!message.startsWith(`${file}:`)) return message;
  return message
    .slice(file.length + 1)
    .replace(/^\d+:/, '')
    .trimStart();
}

/** Problems found so far, and how much was checked. */
export class Findings {
  readonly problems: VerifyProblem[] = [];
  files = 0;
  streams = 0;
  records = 0;
  blobs = 0;
  /** Entries found that are not regular files (a FIFO, a device, a link): the store is not opened over them. */
  notRegular = 0;

  /** Records damage: verify exits 1. */
  error(file: string, line: number | undefined, message: string): void {
    this.problems.push({ severity: 'error', file, ...(line === undefined ? {} : { line }), message });
  }

  /** Records something a writer repairs by itself (a torn tail): exit 0 unless --strict. */
  warning(file: string, line: number | undefined, message: string): void {
    this.problems.push({ severity: 'warning', file, ...(line === undefined ? {} : { line }), message });
  }

  /** How many errors were recorded. */
  get errors(): number {
    return this.problems.filter((problem) => problem.severity === 'error').length;
  }
}
