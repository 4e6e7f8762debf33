import { EXIT_CODES_HELP } from './exit-codes.js';

/** The help text after a command's options: its examples, then the exit codes. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n\n${EXIT_CODES_HELP}`;
}
