import { z } from 'zod';
import { streamIdText } from './parse.js';

/** The first line of an export file. */
export const PORTABLE_FORMAT = 'sessionfold.export';
export const PORTABLE_VERSION = 1;

const json: z.ZodType<unknown> = z.unknown();
/** A stream id as every store accepts it, checked before anything is written. */
const stream = streamIdText;

/**
 * One line of the portable JSON-lines file: a header, then per stream its head line, its snapshot (if any),
 * its events in revision order (each with its data's `schemaVersion` when that is not 1) and the blobs it owns
 * (base64), and an end line with the counts. Positions and `recordedAt` are not carried: the destination store
 * gives its own.
 */
export const portableLineSchema = z.discriminatedUnion('kind', [
  // `exportedAt` is written by export and only informs: a header without it is as good.
  z.object({ kind: z.literal('header'), format: z.literal(PORTABLE_FORMAT), version: z.literal(PORTABLE_VERSION), exportedAt: z.string().optional() }),
  z.object({ kind: z.literal('stream'), stream, revision: z.number().int().min(1) }),
  z.object({
    kind: z.literal('snapshot'),
    stream,
    snapshot: z.object({ revision: z.number().int().min(1), state: json, identity: z.object({ stream: z.string(), schemaVersion: z.number().int() }) }),
  }),
  z.object({
    kind: z.literal('event'),
    stream,
    revision: z.number().int().min(1),
    type: z.string(),
    data: json,
    eventId: z.string().optional(),
    // Written only when not 1, so files of events that all have version 1 read as before.
    schemaVersion: z.number().int().min(2).optional(),
  }),
  z.object({ kind: z.literal('blob'), stream, sha256: z.string().regex(/^[0-9a-f]{64}$/), base64: z.string() }),
  z.object({ kind: z.literal('end'), streams: z.number().int().min(0), events: z.number().int().min(0), blobs: z.number().int().min(0) }),
]);
export type PortableLine = z.infer<typeof portableLineSchema>;
