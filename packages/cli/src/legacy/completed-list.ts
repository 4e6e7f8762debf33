import type { CompletionReceipt } from '@sessionfold/core';
import { completionReceiptSchema } from '@sessionfold/core/session';
import { readRegularFile } from '../files.js';

/** A completed list line that could not be read. */
export interface ListProblem {
  line: number;
  message: string;
}

/**
 * Reads the legacy completed list: each non-empty line is a bare session object id or a JSON receipt. A
 * session object id listed again is the same receipt (the first one wins), as the legacy service read it. Only a
 * regular file is read (a link to one is followed when `follow`, for a path the user named); anything else is a
 * `CliError` naming it.
 */
export async function readCompletedList(path: string, options: { follow: boolean }): Promise<{ receipts: CompletionReceipt[]; problems: ListProblem[] }> {
  const text = (await readRegularFile(path, 'completed list', options)).toString('utf8');
  const receipts: CompletionReceipt[] = [];
  const problems: ListProblem[] = [];
  const seen = new Set<string>();
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '') return;
    let receipt: CompletionReceipt;
    if (line.startsWith('{')) {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        problems.push({ line: index + 1, message: 'not valid JSON' });
        return;
      }
      const parsed = completionReceiptSchema.safeParse(value);
      if (!parsed.success) {
        problems.push({ line: index + 1, message: `not a completion receipt (${parsed.error.issues[0]?.message ?? 'invalid'})` });
        return;
      }
      receipt = parsed.data;
    } else {
      receipt = completionReceiptSchema.parse({ sessionObjectId: line });
    }
    if (seen.has(receipt.sessionObjectId)) return;
    seen.add(receipt.sessionObjectId);
    receipts.push(receipt);
  });
  return { receipts, problems };
}
