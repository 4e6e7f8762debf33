import { DELETED_RECORD, SNAPSHOT_RECORD, type Snapshot } from '@sessionfold/core/kernel';
import { isEventSchemaVersion } from '@sessionfold/core/store-kit';
import { decodeStoredLine, isPositiveInt } from '../journal-codec.js';

/**
 * One record of the log, as a scan reads it. A `change` is every record that takes a position: an event, a
 * `$snapshot` (its `dataJson` the snapshot) or a `$deleted` (data null). A `blob` records that `stream` owns the
 * blob `sha256` (written before the blob's file), or with `gone` that it no longer does (a put that failed, or
 * whose file a crash lost); it takes no position.
 */
export type LogRecord = ChangeRecord | BlobRecord;

export interface ChangeRecord {
  kind: 'change';
  stream: string;
  revision: number;
  position: number;
  recordedAt: string;
  type: string;
  eventId: string | undefined;
  schemaVersion: number | undefined;
  /** Set on every line of a batch but its last. */
  more: boolean;
  dataJson: string;
}

export interface BlobRecord {
  kind: 'blob';
  stream: string;
  sha256: string;
  gone: boolean;
}

const SHA256 = /^[0-9a-f]{64}$/;

/** The payload of a blob-owner line (or, with `gone`, of the line that takes the ownership back). */
export function blobPayload(stream: string, sha256: string, gone: boolean): string {
  return `{"stream":${JSON.stringify(stream)},"blob":"${sha256}"${gone ? ',"gone":true' : ''}}`;
}

/**
 * Decodes the line `buf[start, end)` (newline excluded) as a log record, or says why it is not one: a bad frame
 * or checksum, or a payload that is no record of the log.
 */
export function decodeLogLine(buf: Buffer, start: number, end: number): LogRecord | { damage: string } {
  const decoded = decodeStoredLine(buf, start, end);
  if ('reason' in decoded) return { damage: decoded.reason };
  const v = decoded.value as Record<string, unknown> | null;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { damage: 'payload is not an object' };
  if (typeof v.stream !== 'string' || v.stream.length === 0) return { damage: 'stream is not a non-empty string' };
  if (v.blob !== undefined) {
    if (typeof v.blob !== 'string' || !SHA256.test(v.blob)) return { damage: 'blob is not a lowercase hex sha256' };
    if (v.gone !== undefined && v.gone !== true) return { damage: 'gone is not true' };
    return { kind: 'blob', stream: v.stream, sha256: v.blob, gone: v.gone === true };
  }
  if (!isPositiveInt(v.revision)) return { damage: 'revision is not an integer ≥ 1' };
  if (!isPositiveInt(v.position)) return { damage: 'position is not an integer ≥ 1' };
  if (typeof v.recordedAt !== 'string') return { damage: 'recordedAt is not a string' };
  if (typeof v.type !== 'string' || v.type.length === 0) return { damage: 'type is not a string' };
  if (v.eventId !== undefined && typeof v.eventId !== 'string') return { damage: 'eventId is not a string' };
  if (v.schemaVersion !== undefined && !isEventSchemaVersion(v.schemaVersion)) return { damage: 'schemaVersion is not an integer from 1 to 2147483647' };
  if (v.more !== undefined && v.more !== true) return { damage: 'more is not true' };
  if (typeof v.dataJson !== 'string') return { damage: 'data is missing' };
  const record: ChangeRecord = {
    kind: 'change',
    stream: v.stream,
    revision: v.revision,
    position: v.position,
    recordedAt: v.recordedAt,
    type: v.type,
    eventId: v.eventId,
    schemaVersion: v.schemaVersion as number | undefined,
    more: v.more === true,
    dataJson: v.dataJson,
  };
  if (record.type === SNAPSHOT_RECORD || record.type === DELETED_RECORD) {
    const damage = reservedRecordDamage(record);
    if (damage !== undefined) return { damage };
  }
  return record;
}

/** Why a `$snapshot` or `$deleted` record is not what the writer writes, or undefined. */
function reservedRecordDamage(record: ChangeRecord): string | undefined {
  if (record.more || record.eventId !== undefined || record.schemaVersion !== undefined)
    return `a ${record.type} record is a batch of its own, without eventId or schemaVersion`;
  if (record.type === DELETED_RECORD) return record.dataJson === 'null' ? undefined : 'a $deleted record has data null';
  let snapshot: unknown;
  try {
    snapshot = JSON.parse(record.dataJson);
  } catch {
    return 'the snapshot is not JSON';
  }
  const s = snapshot as Partial<Snapshot> | null;
  if (typeof s !== 'object' || s === null || Array.isArray(s) || !('state' in s)) return 'the snapshot has no state';
  if (Object.keys(s).some((key) => key !== 'revision' && key !== 'state' && key !== 'identity'))
    return 'the snapshot has members other than revision, state and identity';
  if (s.revision !== record.revision) return `the snapshot's revision ${JSON.stringify(s.revision)} is not the record's ${record.revision}`;
  const identity = s.identity as { stream?: unknown; schemaVersion?: unknown } | undefined;
  if (typeof identity !== 'object' || identity === null || identity.stream !== record.stream)
    return `the snapshot's identity does not name stream ${record.stream}`;
  if (!isEventSchemaVersion(identity.schemaVersion)) return "the snapshot's identity has no valid schemaVersion";
  return undefined;
}
