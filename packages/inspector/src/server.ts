import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SessionHistoryError, type EventStore, type ListSortKey, type SessionHistory } from '@sessionfold/core';
import type { VerifyReport } from '@sessionfold/core/kernel';
import { changes, lastPosition, POLL_MS } from './feed.js';
import { escapeHtml, type Html } from './html.js';
import { layout, livePage, refusedPage, sessionPage, sessionsPage, storePage, type SessionsQuery } from './pages.js';
import { sessionParts, stateAtRevision, timelinePage, type TimelinePage } from './queries.js';
import { STYLE } from './style.js';

/** Options of `startInspector`. */
export interface InspectorOptions {
  /** The store, opened read-only. */
  store: EventStore;
  /** A read-only session service on `store` (opened with `follow: true`, so listings stay current). */
  service: SessionHistory;
  /** How the page names the store (a location, without credentials). */
  storeName: string;
  /** The address to bind; default `127.0.0.1`. Anything else is reachable by others: the token is then all that protects it. */
  host?: string;
  /** The port; default 0 (a free one). */
  port?: number;
}

/** A running inspector: `url` carries the token that signs a browser in; `close` ends every connection. */
export interface Inspector {
  /** The URL to open, with `?token=`. */
  url: string;
  /** The server's origin, without the token. */
  origin: string;
  /** The token: sent as `Authorization: Bearer <token>` by scripts. */
  token: string;
  /** Stops the server: ends every open page's feed and connection. The store and the service stay open. */
  close(): Promise<void>;
}

/** The API's version: its paths start with `/api/v1/`. */
export const API_PREFIX = '/api/v1';
const PAGE_SIZE = 100;

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves the inspector for `store`: pages, the JSON API under `/api/v1` and the change feed as server-sent events.
 * Nothing it serves writes. Every request needs the token (the cookie the token URL sets, or a bearer header) and
 * a `Host` naming this server, so neither another site nor a rebound DNS name can read the store through a browser.
 */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const host = options.host ?? '127.0.0.1';
  const token = randomBytes(24).toString('base64url');
  const tokenBytes = Buffer.from(token);
  const { store, service } = options;
  const feeds = new Set<AbortController>();
  let lastVerify: VerifyReport | undefined;
  let seenPosition = 0;
  let port = 0;
  let cookieName = 'sessionfold_inspect';
  const script = await clientScript();

  const tokenMatches = (candidate: string | undefined): boolean => {
    if (candidate === undefined) return false;
    const bytes = Buffer.from(candidate);
    return bytes.length === tokenBytes.length && timingSafeEqual(bytes, tokenBytes);
  };
  const allowedHosts = (): Set<string> => {
    const names = new Set(['127.0.0.1', 'localhost', '[::1]']);
    names.add(host.includes(':') ? `[${host}]` : host);
    return new Set([...names].map((name) => `${name}:${port}`));
  };
  // A wildcard bind is reached under names this server cannot know: the token alone guards it.
  const anyHost = host === '0.0.0.0' || host === '::';

  const currentEnd = async (): Promise<number> => {
    const reported = await lastPosition(store);
    seenPosition = Math.max(seenPosition, reported);
    return seenPosition;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
    if (!anyHost && !allowedHosts().has(request.headers.host ?? '')) throw new HttpError(403, 'host not allowed: open the inspector by the address it printed');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      throw new HttpError(405, 'the inspector only reads');
    }
    const url = new URL(request.url ?? '/', 'http://inspector.invalid');
    const offered = url.searchParams.get('token');
    if (offered !== null) {
      if (!tokenMatches(offered)) throw new HttpError(401, 'wrong token');
      // The token leaves the address bar at once: the cookie carries it from here on.
      url.searchParams.delete('token');
      response.setHeader('set-cookie', `${cookieName}=${token}; HttpOnly; SameSite=Strict; Path=/`);
      response.writeHead(303, { location: `${url.pathname}${url.search}` }).end();
      return;
    }
    if (!signedIn(request)) throw new HttpError(401, 'sign in with the URL sessionfold inspect printed, or send Authorization: Bearer <token>');
    const path = url.pathname;
    const params = url.searchParams;
    if (path === '/assets/app.js') return send(response, 200, 'text/javascript; charset=utf-8', script);
    if (path === '/assets/style.css') return send(response, 200, 'text/css; charset=utf-8', STYLE);
    if (path === `${API_PREFIX}/feed`) return feed(request, response, params);
    if (path.startsWith(`${API_PREFIX}/`)) return json(response, 200, await api(path.slice(API_PREFIX.length), params, response));
    return page(path, params, response);
  };

  const signedIn = (request: IncomingMessage): boolean => {
    const authorization = request.headers.authorization;
    if (authorization?.startsWith('Bearer ')) return tokenMatches(authorization.slice('Bearer '.length));
    for (const part of (request.headers.cookie ?? '').split(';')) {
      const [name, value] = part.trim().split('=', 2);
      if (name === cookieName) return tokenMatches(value);
    }
    return false;
  };

  const sessionMatch = (path: string) => /^\/sessions\/([^/]+)(\/[a-z]+)?(?:\/([^/]+))?$/.exec(path);

  /** The JSON API: every answer is a document a script can use as is. */
  const api = async (path: string, params: URLSearchParams, response: ServerResponse): Promise<unknown> => {
    if (path === '/sessions') return service.listPage(listQuery(params));
    if (path === '/store') return { status: (await store.status?.()) ?? null, lastVerify: lastVerify ?? null, canVerify: typeof store.verify === 'function' };
    if (path === '/store/verify') {
      if (typeof store.verify !== 'function') throw new HttpError(404, 'this store cannot verify itself');
      lastVerify = await store.verify();
      return lastVerify;
    }
    const match = sessionMatch(path);
    if (match === null) throw new HttpError(404, 'no such API path');
    const id = decodeURIComponent(match[1] as string);
    switch (match[2]) {
      case undefined:
        return service.get(id);
      case '/events':
        return timelinePage(store, id, intParam(params, 'after', 0, 0), intParam(params, 'limit', PAGE_SIZE, 1, 1000));
      case '/state':
        return stateAtRevision(store, id, intParam(params, 'revision', undefined, 1));
      case '/commands':
        return sessionParts(await service.get(id)).commands;
      case '/objects': {
        if (match[3] === undefined) return sessionParts(await service.get(id)).objects;
        const object = await service.object(id, decodeURIComponent(match[3]));
        response.setHeader(
          'content-disposition',
          `attachment; filename="${object.fileName.replace(/["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(object.fileName)}`,
        );
        send(response, 200, object.mediaType, Buffer.from(object.bytes));
        return undefined;
      }
      default:
        throw new HttpError(404, 'no such API path');
    }
  };

  const page = async (path: string, params: URLSearchParams, response: ServerResponse): Promise<void> => {
    const ok = (title: string, current: Parameters<typeof layout>[2], main: Html) =>
      send(response, 200, 'text/html; charset=utf-8', layout(title, options.storeName, current, main));
    if (path === '/') {
      const query = listQuery(params);
      const shown: SessionsQuery = { ...query, sort: query.sort ?? 'lastActivityAt', order: query.order ?? 'desc' };
      return ok('Sessions', 'sessions', sessionsPage(shown, await service.listPage(query)));
    }
    if (path === '/live') return ok('Live', 'live', livePage(await currentEnd()));
    if (path === '/store') {
      if (params.get('verify') === '1' && typeof store.verify === 'function') lastVerify = await store.verify();
      return ok('Store', 'store', storePage(await store.status?.(), lastVerify, typeof store.verify === 'function'));
    }
    const match = sessionMatch(path);
    if (match === null || match[2] !== undefined) throw new HttpError(404, 'no such page');
    const id = decodeURIComponent(match[1] as string);
    const record = await service.get(id);
    let timeline: TimelinePage | undefined = await timelinePage(store, record.id, intParam(params, 'after', 0, 0), PAGE_SIZE).catch((error: unknown) => {
      if (error instanceof SessionHistoryError && error.code === 'not_found') return undefined;
      throw error;
    });
    if (timeline?.revision === 0) timeline = undefined;
    const revision = params.get('revision');
    const state = timeline === undefined || revision === null ? undefined : await stateAtRevision(store, record.id, intParam(params, 'revision', 1, 1));
    return ok(`Session ${record.id}`, 'session', sessionPage(record, timeline, state, sessionParts(record)));
  };

  /** Server-sent events: `change` for each record of the feed from `from` on, `status` with the store's end every second. */
  const feed = async (request: IncomingMessage, response: ServerResponse, params: URLSearchParams): Promise<void> => {
    const end = await currentEnd();
    const from = intParam(params, 'from', end + 1, 1);
    const abort = new AbortController();
    feeds.add(abort);
    request.on('close', () => abort.abort());
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    const event = (name: string, data: unknown) => response.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    event('status', { lastPosition: end });
    const timer = setInterval(() => {
      currentEnd().then(
        (lastPosition) => event('status', { lastPosition }),
        () => undefined,
      );
    }, POLL_MS);
    try {
      for await (const record of changes(store, from, abort.signal)) {
        seenPosition = Math.max(seenPosition, record.position);
        event('change', { position: record.position, stream: record.streamId, revision: record.revision, type: record.type, recordedAt: record.recordedAt });
      }
    } catch (error) {
      if (!abort.signal.aborted) event('failure', { message: error instanceof Error ? error.message : String(error) });
    } finally {
      clearInterval(timer);
      feeds.delete(abort);
      response.end();
    }
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => fail(request, response, error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  // Cookies are shared by every port of a host: the name keeps two inspectors from signing each other out.
  cookieName = `sessionfold_inspect_${port}`;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: `${origin}/?token=${token}`,
    origin,
    token,
    close: async () => {
      for (const abort of feeds) abort.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function listQuery(params: URLSearchParams) {
  const text = (name: string) => {
    const value = params.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const sort = text('sort');
  const order = text('order');
  const limit = text('limit');
  return {
    phase: text('phase') as never,
    sessionType: text('sessionType'),
    search: text('search'),
    sort: sort as ListSortKey | undefined,
    order: order as 'asc' | 'desc' | undefined,
    limit: limit === undefined ? undefined : Number(limit),
    cursor: text('cursor'),
  } satisfies Record<string, unknown>;
}

function intParam(params: URLSearchParams, name: string, fallback: number | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const text = params.get(name);
  if (text === null || text === '') {
    if (fallback === undefined) throw new HttpError(400, `${name}: required`);
    return fallback;
  }
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new HttpError(400, `${name}: expected an integer from ${min} to ${max}`);
  return value;
}

function send(response: ServerResponse, status: number, type: string, body: string | Buffer): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

function json(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return;
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

/** An error as the client gets it: its status and a message that names no storage detail. */
function fail(request: IncomingMessage, response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  let status = 500;
  let code = 'internal_error';
  let message = 'internal error';
  if (error instanceof HttpError) {
    status = error.status;
    code =
      status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : status === 404 ? 'not_found' : status === 405 ? 'method_not_allowed' : 'invalid_request';
    message = error.message;
  } else if (error instanceof SessionHistoryError) {
    status = error.code === 'not_found' ? 404 : error.code === 'invalid_request' ? 400 : error.code === 'state_conflict' ? 409 : 500;
    code = error.code;
    message = error.message;
  }
  const wantsHtml = !(request.url ?? '').startsWith(`${API_PREFIX}/`) && (request.headers.accept ?? '').includes('text/html');
  if (wantsHtml) {
    const body =
      status === 401
        ? refusedPage()
        : `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${status}</title></head><body><h1>${status}</h1><p>${escapeHtml(message)}</p><p><a href="/">Sessions</a></p></body></html>`;
    send(response, status, 'text/html; charset=utf-8', body);
    return;
  }
  json(response, status, { error: { code, message } });
}

/** The page's script, compiled by tsc from `client/` beside the server's own output. */
async function clientScript(): Promise<string> {
  for (const candidate of ['./client/app.js', '../dist/client/app.js']) {
    try {
      return await readFile(new URL(candidate, import.meta.url), 'utf8');
    } catch {
      // Run from the sources (tests), the compiled script is in dist/.
    }
  }
  throw new Error('@sessionfold/inspector: the page script is missing: run npm run build');
}
