import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createHash } from 'node:crypto';
import type { Command } from 'commander';
import type { EventStore, NewEvent } from '@sessionfold/core/kernel';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { CliError, ExitCode, refused } from '../exit-codes.js';
import { assertInputFile, openRegularFile } from '../files.js';
import { holdsFileStore } from '../open-store.js';
import { examples } from '../help.js';
import { interruptible } from '../interruption.js';
import { parseArg } from '../parse.js';
import { PORTABLE_FORMAT, portableLineSchema, type PortableLine } from '../portable.js';
import { progress } from '../progress.js';
import { describeLocation, parseStoreUrl, type StoreLocation } from '../store-url.js';

const optionsSchema = z.object({ dryRun: z.boolean().default(false), yes: z.boolean().default(false) });

/** Events appended per batch while importing. */
const BATCH = 500;

/**
 * `import <FILE>`: loads an export file into the store. The file is checked whole first (format, order, counts,
 * blob hashes) and nothing is written if it is damaged. Into a store that already holds streams it needs --yes;
 * a stream that exists in both is refused before anything is written.
 */
export function registerImport(program: Command): void {
  program
    .command('import')
    .description('load an export file (JSON lines) into the store')
    .argument('<file>', 'a file written by `sessionfold export`')
    .option('--dry-run', 'check the file and print what would be imported; change nothing')
    .option('-y, --yes', 'import into a store that already holds streams')
    .addHelpText(
      'after',
      examples('sessionfold import backup.jsonl -s sqlite:./restored.db', 'sessionfold import backup.jsonl -s file:./data --dry-run') +
        "\n\nPositions and recordedAt are the destination store's own: the file carries neither.",
    )
    .action(async (rawFile: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const file = parseArg(z.string().min(1), rawFile, '<file>');
      const options = parseArg(optionsSchema, rawOptions, 'options');
      await assertInputFile(file, 'file');
      const { out } = context;
      const plan = await checkFile(file);
      const location = parseStoreUrl(context.storeUrl);
      const where = describeLocation(location);
      // A dry run only looks; a store that does not exist yet is simply empty, and is not created.
      if (options.dryRun && !storeExists(location)) return report(0);
      await interruptible((interruption) =>
        withStore(context, options.dryRun ? 'read' : 'create', async ({ store }) => {
          let existing = 0;
          const clashes: string[] = [];
          for await (const { stream } of store.streams()) {
            existing++;
            if (plan.streams.has(stream)) clashes.push(stream);
          }
          if (clashes.length > 0) {
            throw refused(
              `${clashes.length} stream(s) of the file already exist in ${where} (first: ${clashes[0]}); nothing was imported`,
              'Try: import into an empty store',
            );
          }
          if (options.dryRun) return report(existing);
          if (existing > 0 && !options.yes) {
            throw refused(
              `${where} already holds ${existing} stream(s); importing adds ${plan.streams.size} more`,
              'Try: --dry-run to see what would be imported, then --yes',
            );
          }
          const bar = progress(out, 'import', plan.streams.size);
          try {
            let loaded = 0;
            await load(store, file, async () => {
              loaded++;
              bar.tick();
              if (loaded < plan.streams.size)
                await interruption.between(
                  `${loaded} of ${plan.streams.size} stream(s); each stream imported is whole`,
                  'Try: sessionfold delete or a fresh store for the streams imported, then import again',
                );
            });
          } finally {
            bar.stop();
          }
          await report(existing);
        }),
      );

      async function report(existing: number): Promise<void> {
        const summary = {
          file,
          store: where,
          dryRun: options.dryRun,
          streams: plan.streams.size,
          events: plan.events,
          blobs: plan.blobs,
          existingStreams: existing,
        };
        if (out.json) return out.document(summary);
        const verb = options.dryRun ? 'would import' : 'imported';
        await out.text(
          `${verb} ${plan.streams.size} stream(s), ${plan.events} event(s), ${plan.blobs} blob(s) into ${where}${existing > 0 ? ` (which held ${existing} stream(s))` : ''}`,
        );
      }
    });
}

/** What a checked file holds. */
interface Plan {
  streams: Set<string>;
  events: number;
  blobs: number;
}

async function* lines(file: string): AsyncGenerator<{ line: number; value: PortableLine }> {
  let line = 0;
  // Opened again, and checked again: what was checked first may have been replaced by a pipe since.
  const handle = await openRegularFile(file, 'file', { follow: true });
  const input = handle.createReadStream();
  try {
    for await (const text of createInterface({ input, crlfDelay: Infinity })) {
      line++;
      if (text.trim() === '') continue;
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        throw damaged(file, line, 'not JSON');
      }
      const parsed = portableLineSchema.safeParse(raw);
      if (!parsed.success) throw damaged(file, line, `not a line of an export file (${describeIssue(parsed.error.issues[0])})`);
      yield { line, value: parsed.data };
    }
  } finally {
    input.destroy();
  }
}

/** A schema issue with the field it is about: `version: expected 1`. */
function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return 'invalid';
  const field = issue.path.map(String).join('.');
  return field === '' ? issue.message : `field ${field}: ${issue.message}`;
}

function damaged(file: string, line: number, why: string): CliError {
  return new CliError(ExitCode.problems, `${file}:${line}: ${why}; nothing was imported`);
}

/** Reads the whole file once, checking its order and counts, before anything is written. */
async function checkFile(file: string): Promise<Plan> {
  const plan: Plan = { streams: new Set(), events: 0, blobs: 0 };
  let header = false;
  let ended = false;
  let current: { stream: string; revision: number; at: number } | undefined;
  let lastLine = 0;
  for await (const { line, value } of lines(file)) {
    lastLine = line;
    if (ended) throw damaged(file, line, 'content after the end line');
    if (!header) {
      if (value.kind !== 'header') throw damaged(file, line, `the first line is not a ${PORTABLE_FORMAT} header`);
      header = true;
      continue;
    }
    switch (value.kind) {
      case 'header':
        throw damaged(file, line, 'a second header');
      case 'stream':
        if (current && current.at !== current.revision)
          throw damaged(file, line, `stream ${current.stream} ends at revision ${current.at}, not ${current.revision}`);
        if (plan.streams.has(value.stream)) throw damaged(file, line, `stream ${value.stream} appears twice`);
        plan.streams.add(value.stream);
        current = { stream: value.stream, revision: value.revision, at: 0 };
        break;
      case 'snapshot':
        if (current?.stream !== value.stream || current.at !== 0) throw damaged(file, line, 'a snapshot out of place');
        if (value.snapshot.identity.stream !== value.stream)
          throw damaged(file, line, `the snapshot's identity names stream ${value.snapshot.identity.stream}`);
        current.at = value.snapshot.revision;
        break;
      case 'event':
        if (current?.stream !== value.stream || value.revision !== current.at + 1) throw damaged(file, line, 'an event out of order');
        if (value.type.startsWith('$')) throw damaged(file, line, `event type ${value.type} is reserved for the change feed`);
        current.at = value.revision;
        plan.events++;
        break;
      case 'blob':
        if (current?.stream !== value.stream) throw damaged(file, line, 'a blob out of place');
        if (createHash('sha256').update(Buffer.from(value.base64, 'base64')).digest('hex') !== value.sha256)
          throw damaged(file, line, `blob ${value.sha256} does not match its hash`);
        plan.blobs++;
        break;
      case 'end':
        if (current && current.at !== current.revision)
          throw damaged(file, line, `stream ${current.stream} ends at revision ${current.at}, not ${current.revision}`);
        if (value.streams !== plan.streams.size || value.events !== plan.events || value.blobs !== plan.blobs)
          throw damaged(file, line, 'the counts of the end line do not match the file');
        ended = true;
        break;
    }
  }
  if (!ended) {
    // Named after the last line there is: the end line should have followed it.
    if (lastLine === 0) throw new CliError(ExitCode.problems, `${file}: the file is empty, not an export file; nothing was imported`);
    throw damaged(file, lastLine + 1, `the file ends after line ${lastLine} without its end line (cut short?)`);
  }
  return plan;
}

/** Writes the (already checked) file into the store, stream by stream. */
async function load(store: EventStore, file: string, streamDone: () => Promise<void>): Promise<void> {
  let stream: string | undefined;
  let revision = 0;
  let batch: NewEvent[] = [];
  const flush = async () => {
    if (!stream || batch.length === 0) return;
    revision = (await store.append(stream, batch, { expectedRevision: revision === 0 ? 'no_stream' : revision })).revision;
    batch = [];
  };
  for await (const { value } of lines(file)) {
    switch (value.kind) {
      case 'stream':
        await flush();
        if (stream) await streamDone();
        stream = value.stream;
        revision = 0;
        break;
      case 'snapshot':
        revision = (await store.restoreStream(value.stream, value.snapshot as never)).revision;
        break;
      case 'event':
        batch.push({
          type: value.type,
          data: value.data as never,
          ...(value.eventId === undefined ? {} : { eventId: value.eventId }),
          ...(value.schemaVersion === undefined ? {} : { schemaVersion: value.schemaVersion }),
        });
        if (batch.length >= BATCH) await flush();
        break;
      case 'blob':
        await flush();
        await store.putBlob(value.stream, Buffer.from(value.base64, 'base64'));
        break;
      case 'end':
        await flush();
        if (stream) await streamDone();
        break;
      default:
        break;
    }
  }
}

/** Whether a store exists at `location` (a server-side store is taken to exist). */
function storeExists(location: StoreLocation): boolean {
  if (location.kind === 'file') return holdsFileStore(location.directory);
  if (location.kind === 'sqlite') return existsSync(location.path);
  return true;
}
