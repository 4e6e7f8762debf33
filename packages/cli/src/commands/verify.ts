import type { Command } from 'commander';
import { SessionfoldError, type CompleteEventStore, type CorruptionError } from '@sessionfold/core/kernel';
import { isAbsolute, relative } from 'node:path';
import { z } from 'zod';
import { contextOf } from '../context.js';
import { ExitCode, noteStoreKind } from '../exit-codes.js';
import { examples } from '../help.js';
import { openStore, type VerifyProblem } from '../open-store.js';
import { parseArg } from '../parse.js';
import { progress } from '../progress.js';
import { describeLocation, parseStoreUrl } from '../store-url.js';
import { scanFileStore } from '../verify/file-scan.js';
import { Findings, withoutPlace } from '../verify/problems.js';

/**
 * `verify [--strict]`: a file store's every file scanned by the CLI's own reader, then the store's own `verify()`
 * (every store has one). Never writes. Exit 1 on any error (with --strict, on any
 * warning too); a torn tail alone is a warning.
 */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check every record, journal line and blob; name the file and line (or table and key) of each problem')
    .option('--strict', 'treat warnings (a torn tail) as problems: exit 1')
    .addHelpText('after', examples('sessionfold verify -s file:./data', 'sessionfold verify --strict --json -s sqlite:./sessions.db'))
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const { strict } = parseArg(z.object({ strict: z.boolean().default(false) }), rawOptions, 'options');
      const { out } = context;
      const location = parseStoreUrl(context.storeUrl);
      const where = describeLocation(location);
      const findings = new Findings();
      const bar = progress(out, 'verify');
      try {
        // A file store is scanned file by file first, by the CLI's own reader: damage stops the store from opening,
        // and the scan names every damaged place, not just the first.
        if (location.kind === 'file') await scanFileStore(location.directory, findings, bar);
        let opened;
        try {
          // The store's own code would open what the scan refused to (a FIFO waits for a writer forever): the scan
          // has named each of them, and the store is checked once they are gone.
          if (findings.notRegular === 0) opened = await openStore(location, 'read');
          else
            findings.error(
              where,
              undefined,
              'the store was not opened: it holds files that are not regular files (named above); verify again once they are gone',
            );
        } catch (error) {
          if (!(error instanceof SessionfoldError) || error.code !== 'corruption') throw error;
          // What the scan found already stopped the open: the scan said where.
          const { file, line } = error as CorruptionError;
          if (findings.errors === 0) findings.error(file, line, withoutPlace(error.message, file));
        }
        if (opened) {
          try {
            // A file store's scan read every file; the store's own verify() also checks them against what the store
            // records of them (its manifest, stream names in lines, checkpoints): what it finds in a file the scan
            // found nothing wrong with is added.
            if (location.kind !== 'file') await checkThroughStore(opened.store, where, findings);
            else await addStoreFindings(opened.store, location.directory, findings);
          } finally {
            await opened.store.close();
          }
        }
      } catch (error) {
        noteStoreKind(error, location.kind);
        throw error;
      } finally {
        bar.stop();
      }
      const problems: VerifyProblem[] = findings.problems;
      const errors = problems.filter((problem) => problem.severity === 'error').length;
      const warnings = problems.length - errors;
      const ok = errors === 0 && (!strict || warnings === 0);
      if (out.json) {
        await out.document({
          ok,
          store: where,
          errors,
          warnings,
          problems,
          checked: { files: findings.files, streams: findings.streams, records: findings.records, blobs: findings.blobs },
        });
      } else {
        for (const problem of problems) {
          await out.text(`${problem.severity}: ${problem.file}${problem.line === undefined ? '' : `:${problem.line}`}: ${problem.message}`);
        }
        await out.text(`${ok ? 'ok' : 'problems found'}: ${errors} error(s), ${warnings} warning(s) in ${where}`);
      }
      if (!ok) process.exitCode = ExitCode.problems;
    });
}

/** Problems the file store's `verify()` finds in files the scan found no problem of that severity in, named relative to `directory`. */
async function addStoreFindings(store: CompleteEventStore, directory: string, findings: Findings): Promise<void> {
  const named = (file: string) => (isAbsolute(file) && !relative(directory, file).startsWith('..') ? relative(directory, file) : file);
  const seen = new Set(findings.problems.map((problem) => `${problem.severity} ${named(problem.file)}`));
  for (const problem of (await store.verify()).problems) {
    const file = named(problem.file ?? directory);
    if (seen.has(`${problem.severity} ${file}`)) continue;
    seen.add(`${problem.severity} ${file}`);
    // The store's message names its file already; the report names it once, relative to the store.
    const message = withoutPlace(problem.message, problem.file ?? '');
    findings.problems.push({ severity: problem.severity, file, line: problem.line, message });
  }
}

/** The store's own `verify()`, its problems named by file or table and key. */
async function checkThroughStore(store: CompleteEventStore, where: string, findings: Findings): Promise<void> {
  const report = await store.verify();
  // What the store's own check went through: a store with events and blobs never reports that nothing was checked.
  findings.streams += report.checked.streams;
  findings.records += report.checked.records;
  findings.blobs += report.checked.blobs;
  for (const problem of report.problems) {
    const place = [problem.table && `table ${problem.table}`, problem.key].filter(Boolean).join(' ');
    const message = place ? `${place}: ${problem.message}` : problem.message;
    findings.problems.push({ severity: problem.severity, file: problem.file ?? problem.table ?? where, line: problem.line, message });
  }
}
