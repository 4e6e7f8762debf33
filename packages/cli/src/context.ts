import type { Command } from 'commander';
import { z } from 'zod';
import { noteStoreKind } from './exit-codes.js';
import { openStore, type OpenedStore, type StoreAccess } from './open-store.js';
import { Output } from './output.js';
import { parseArg } from './parse.js';
import { STORE_ENV, parseStoreUrl, type StoreLocation } from './store-url.js';

const globalOptionsSchema = z.object({
  store: z.string().optional(),
  json: z.boolean().default(false),
  quiet: z.boolean().default(false),
});

/** What every command gets: its output and the store URL it was given. */
export interface CommandContext {
  out: Output;
  /** The `--store` URL, or the environment's default. */
  storeUrl: string | undefined;
}

/** The context of `command`: global options (`--store`, `--json`, `--quiet`) wherever they were written. */
export function contextOf(command: Command): CommandContext {
  const options = parseArg(globalOptionsSchema, command.optsWithGlobals(), 'options');
  return { out: new Output({ json: options.json, quiet: options.quiet }), storeUrl: options.store ?? process.env[STORE_ENV] };
}

/** Opens the command's store, runs `work` with it, and closes it whatever happens. */
export async function withStore<T>(context: CommandContext, access: StoreAccess, work: (opened: OpenedStore) => Promise<T>): Promise<T> {
  return withStoreAt(parseStoreUrl(context.storeUrl), access, work);
}

/** Opens the store at `location`, runs `work`, and closes the store; an error is noted as this kind of store's. */
export async function withStoreAt<T>(location: StoreLocation, access: StoreAccess, work: (opened: OpenedStore) => Promise<T>): Promise<T> {
  try {
    const opened = await openStore(location, access);
    try {
      return await work(opened);
    } finally {
      await opened.store.close();
    }
  } catch (error) {
    noteStoreKind(error, location.kind);
    throw error;
  }
}
