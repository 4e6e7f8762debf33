import type { ExpectedRevision } from './port.js';

/** Every error sessionfold throws on purpose carries a stable string `code`. */
export abstract class SessionfoldError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An append or delete named an expected revision that is not the stream's current one; nothing was written. */
export class ConcurrencyError extends SessionfoldError {
  readonly code = 'concurrency_conflict' as const;
  readonly stream: string;
  readonly expected: ExpectedRevision;
  readonly actual: number;
  constructor(stream: string, expected: ExpectedRevision, actual: number, options?: { cause?: unknown }) {
    const found = actual !== 0 ? `revision ${actual}` : expected === 'never_existed' ? 'one that was deleted' : 'no stream';
    super(`Stream ${stream}: expected ${describeExpected(expected)}, found ${found}.`, options);
    this.stream = stream;
    this.expected = expected;
    this.actual = actual;
  }
}

function describeExpected(expected: ExpectedRevision): string {
  if (expected === 'no_stream' || expected === 0) return 'no stream';
  if (expected === 'any') return 'any revision';
  if (expected === 'never_existed') return 'a stream that never existed';
  return `revision ${expected}`;
}

/** Stored data failed a check (checksum, JSON, revision sequence, identity); `file` and `line` say where. */
export class CorruptionError extends SessionfoldError {
  readonly code = 'corruption' as const;
  /** The file, table or other container holding the damaged record. */
  readonly file: string;
  /** 1-based line (file store) or record number, when known. */
  readonly line: number | undefined;
  constructor(file: string, line: number | undefined, reason: string, options?: { cause?: unknown }) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${reason}`, options);
    this.file = file;
    this.line = line;
  }
}

/** Another process holds the store's exclusive writer lock. */
export class StoreLockedError extends SessionfoldError {
  readonly code = 'store_locked' as const;
  readonly lockFile: string;
  /** Process id of the holder, when the lock file names one. */
  readonly holderPid: number | undefined;
  constructor(lockFile: string, holderPid: number | undefined, options?: { cause?: unknown }) {
    super(
      `${lockFile} is held by ${holderPid === undefined ? 'another process' : `process ${holderPid}`}; ` +
        'open the store read-only, or stop the other writer first.',
      options,
    );
    this.lockFile = lockFile;
    this.holderPid = holderPid;
  }
}

/** A caller passed something the port refuses (bad stream id, oversize or non-JSON event, bad option); nothing was touched. */
export class InvalidInputError extends SessionfoldError {
  readonly code = 'invalid_input' as const;
  /** The argument or field at fault, e.g. `stream` or `events[2].data`. */
  readonly field: string;
  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super(`${field}: ${message}`, options);
    this.field = field;
  }
}

/** The storage underneath failed (I/O, SQL, network). `poisoned` means the store refuses writes until reopened. */
export class StorageError extends SessionfoldError {
  readonly code = 'storage_error' as const;
  readonly poisoned: boolean;
  constructor(message: string, options?: { cause?: unknown; poisoned?: boolean }) {
    super(message, options);
    this.poisoned = options?.poisoned ?? false;
  }
}

/** The store was closed; open a new one. */
export class StoreClosedError extends SessionfoldError {
  readonly code = 'store_closed' as const;
  constructor(what = 'the store') {
    super(`${what} is closed.`);
  }
}

/**
 * Stored data is in a format this release does not know — a newer release wrote it. Nothing was touched; open it
 * with that release or a newer one.
 */
export class UnsupportedFormatError extends SessionfoldError {
  readonly code = 'unsupported_format' as const;
  /** The file (or table) that names the format. */
  readonly file: string;
  /** The format version found. */
  readonly version: number;
  /** The newest format version this release reads. */
  readonly supported: number;
  constructor(file: string, version: number, supported: number, options?: { cause?: unknown }) {
    super(
      `${file}: format version ${version} is newer than this release reads (up to ${supported}); open it with the release that wrote it or a newer one.`,
      options,
    );
    this.file = file;
    this.version = version;
    this.supported = supported;
  }
}

/** What a schema-version error is about: a snapshot's state, or an event's data. */
export type VersionedSubject = 'snapshot' | 'event';

/** Where stored data of the wrong schema version was found: a stream's snapshot, or one of its events. */
export interface VersionedLocation {
  stream: string;
  subject: VersionedSubject;
  /** The event's type; undefined for a snapshot. */
  eventType?: string | undefined;
  /** The revision of the event, or the one the snapshot covers. */
  revision: number;
}

/** The location fields both schema-version errors carry, kept in one place. */
export abstract class VersionedDataError extends SessionfoldError {
  readonly stream: string;
  readonly subject: VersionedSubject;
  readonly eventType: string | undefined;
  readonly revision: number;
  constructor(at: VersionedLocation, message: string, options?: { cause?: unknown }) {
    const where =
      at.subject === 'snapshot' ? `The snapshot of ${at.stream} at revision ${at.revision}` : `Event ${at.revision} of ${at.stream} (${at.eventType})`;
    super(`${where} ${message}`, options);
    this.stream = at.stream;
    this.subject = at.subject;
    this.eventType = at.eventType;
    this.revision = at.revision;
  }
}

/**
 * A snapshot or event stored with a schema version newer than the folding code knows — a newer release wrote it.
 * Nothing was applied or reset: fold it with that release or a newer one.
 */
export class SchemaVersionTooNewError extends VersionedDataError {
  readonly code = 'schema_version_too_new' as const;
  /** The version stored. */
  readonly found: number;
  /** The newest version the code knows (of the state, or of this event type's data). */
  readonly supported: number;
  constructor(at: VersionedLocation, found: number, supported: number, options?: { cause?: unknown }) {
    super(
      at,
      `has schema version ${found}, newer than the ${supported} this code knows; fold it with the code that wrote it or a newer one (nothing was applied).`,
      options,
    );
    this.found = found;
    this.supported = supported;
  }
}

/**
 * A snapshot or event stored with an older schema version than the folding code's, and no migration (snapshot)
 * or upcaster (event) from `from`: the reducer's chain of steps has a gap. Nothing was applied.
 */
export class MissingMigrationError extends VersionedDataError {
  readonly code = 'missing_migration' as const;
  /** The version no step starts from. */
  readonly from: number;
  /** The version the chain had to reach (the reducer's state version, or this event type's newest). */
  readonly to: number;
  constructor(at: VersionedLocation, from: number, to: number, options?: { cause?: unknown }) {
    const step = at.subject === 'snapshot' ? 'a migration' : 'an upcaster';
    super(at, `needs ${step} from schema version ${from} on its way to ${to}, and the reducer declares none.`, options);
    this.from = from;
    this.to = to;
  }
}
