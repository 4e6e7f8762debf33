import crypto from 'node:crypto';
import type { StreamId } from '../kernel/port.js';

// `crypto.hash` (Node 20.12 on) hashes without building a Hash object; older releases of Node 20 take the long way.
// Hex, not a Buffer: the text is what an id is made of, and a Buffer result costs about as much as the hash.
const sha1Hex: (data: Uint8Array) => string =
  typeof crypto.hash === 'function' ? (data) => crypto.hash('sha1', data, 'hex') : (data) => crypto.createHash('sha1').update(data).digest('hex');

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The RFC 4122 namespace for URLs, used to derive this library's own namespaces. */
const URL_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';

/** True when `value` is a UUID in its hyphenated text form (any version, either case). */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/**
 * A name-based (version 5, SHA-1) UUID: the same namespace and name always give the same id, so two
 * processes deriving an id from one idempotency key agree without talking to each other.
 */
export function uuidV5(name: string, namespace: string): string {
  const hex = sha1Hex(Buffer.concat([namespaceBytes(namespace), Buffer.from(name, 'utf8')]));
  // The first 16 bytes, with the version (5) in the high nibble of byte 6 and the RFC 4122 variant (10xx) in byte 8.
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The bytes of this library's own namespaces, parsed once; any other namespace (a session's, for its command ids) is parsed per id. */
const ownNamespaces = new Map<string, Buffer>();

function namespaceBytes(namespace: string): Buffer {
  const own = ownNamespaces.get(namespace);
  if (own) return own;
  if (!isUuid(namespace)) throw new TypeError(`namespace ${JSON.stringify(namespace)} is not a UUID`);
  return Buffer.from(namespace.replace(/-/g, ''), 'hex');
}

/** One of this library's namespaces, derived from its name under the URL namespace. */
function ownNamespace(name: string): string {
  const namespace = uuidV5(name, URL_NAMESPACE);
  ownNamespaces.set(namespace, namespaceBytes(namespace));
  return namespace;
}

/** Namespace of the session ids release 0.1.0 derived from a start idempotency key alone. */
export const SESSION_ID_NAMESPACE = ownNamespace('urn:sessionfold:session');

/** Namespace of session ids derived from a start idempotency key and its incarnation. */
export const START_INCARNATION_NAMESPACE = ownNamespace('urn:sessionfold:session-incarnation');

/** Namespace of the names of start-key streams. */
export const START_KEY_NAMESPACE = ownNamespace('urn:sessionfold:start-key');

/** Namespace of catalog event ids derived from session object ids. */
export const RECEIPT_ID_NAMESPACE = ownNamespace('urn:sessionfold:completion-receipt');

/** Prefix of every session stream: `session-<uuid>`. */
export const SESSION_STREAM_PREFIX = 'session-';

/** Prefix of every start-key stream: `start-key-<uuid>`, the uuid derived from the key. */
export const START_KEY_STREAM_PREFIX = 'start-key-';

/** The stream holding completion receipts. */
export const CATALOG_STREAM: StreamId = 'catalog';

/**
 * The id of the session a start with `idempotencyId` creates as the key's `incarnation`-th session (1, 2, ...):
 * the same in every process, and never the id of another incarnation or of a release-0.1.0 session.
 */
export function sessionIdForStart(idempotencyId: string, incarnation: number): string {
  if (!Number.isSafeInteger(incarnation) || incarnation < 1) throw new TypeError(`incarnation ${incarnation} is not a positive integer`);
  return uuidV5(JSON.stringify([idempotencyId, incarnation]), START_INCARNATION_NAMESPACE);
}

/** The id release 0.1.0 gave the session of a start with `idempotencyId` (the key alone, for every incarnation). */
export function legacySessionIdForStart(idempotencyId: string): string {
  return uuidV5(idempotencyId, SESSION_ID_NAMESPACE);
}

/** The stream binding start key `idempotencyId` to its sessions, one incarnation after another. */
export function startKeyStream(idempotencyId: string): StreamId {
  return `${START_KEY_STREAM_PREFIX}${uuidV5(idempotencyId, START_KEY_NAMESPACE)}`;
}

/** The id of the command a session gets for `idempotencyId`, the same in every process. */
export function commandIdFor(sessionId: string, idempotencyId: string): string {
  return uuidV5(idempotencyId, sessionId);
}

/** The stream of session `sessionId` (a lowercase UUID). */
export function sessionStream(sessionId: string): StreamId {
  return `${SESSION_STREAM_PREFIX}${sessionId}`;
}

/** The session id of a session stream, or undefined for any other stream. */
export function sessionIdOfStream(stream: StreamId): string | undefined {
  if (!stream.startsWith(SESSION_STREAM_PREFIX)) return undefined;
  const id = stream.slice(SESSION_STREAM_PREFIX.length);
  return isUuid(id) ? id : undefined;
}
