import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SessionHistory, SessionHistoryError, type SessionHistoryErrorCode } from '@sessionfold/core';
import { matchRoute, type Reply, type RouteRequest } from './routes.js';

/** Options of `listen`. */
export interface HttpApiOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port the system picks. */
  port?: number;
  /** Largest JSON body in bytes (default 1 MiB, the store's default largest event). */
  maxJsonBytes?: number;
  /** Largest object body in bytes (default 16 MiB). */
  maxObjectBytes?: number;
  /** Called with every error that is not the caller's (answered 500), for the application's log. */
  onInternalError?: (error: unknown) => void;
}

/** A listening server. */
export interface HttpApi {
  /** `http://host:port`, the port as bound. */
  readonly url: string;
  /** Requests received and not yet answered. */
  inFlight(): number;
  /**
   * Stops accepting connections, lets the requests in flight finish (each answered with `Connection: close`),
   * and resolves once every connection has ended; connections still open after `timeoutMs` are cut.
   * The service and the store stay open: their opener closes them after this.
   */
  close(options?: { timeoutMs?: number }): Promise<void>;
}

const STATUS: Record<SessionHistoryErrorCode, number> = { invalid_request: 400, not_found: 404, state_conflict: 409, internal_error: 500 };
const INTERNAL_MESSAGE = 'An unexpected error occurred.';

/** An error of the HTTP layer itself (a bad body, an unknown route), answered like the service's errors. */
class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: SessionHistoryErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The client hung up before its request was read: nobody is left to answer, and nothing went wrong here. */
class ClientGone extends Error {}

/** Serves `history` over HTTP on `options.host`:`options.port`; resolves once the server is listening. */
export async function listen(history: SessionHistory, options: HttpApiOptions = {}): Promise<HttpApi> {
  const maxJsonBytes = options.maxJsonBytes ?? 1024 * 1024;
  const maxObjectBytes = options.maxObjectBytes ?? 16 * 1024 * 1024;
  const onInternalError = options.onInternalError ?? (() => {});
  let inFlight = 0;
  let stopping = false;

  const server = createServer((req, res) => {
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      // A keep-alive connection left idle by its last answer must not hold the shutdown open.
      if (stopping) server.closeIdleConnections();
    });
    void answer(req, res);
  });

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let reply: Reply;
    try {
      reply = await route(req);
    } catch (error) {
      // Not an internal error: a client's disconnection is the client's business, and there is no one to answer.
      if (error instanceof ClientGone) return;
      reply = errorReply(error);
    }
    // Decided when the answer goes out: a request that arrived before the shutdown still ends its connection.
    if (stopping) res.setHeader('connection', 'close');
    send(res, reply);
    // Whatever the handler left unread is discarded, so the connection can carry the next request.
    if (!req.complete) req.resume();
  }

  async function route(req: IncomingMessage): Promise<Reply> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let segments: string[];
    try {
      segments = url.pathname.split('/').slice(1).map(decodeURIComponent);
    } catch {
      throw new RequestError(400, 'invalid_request', `The path ${url.pathname} is not well-formed percent-encoding.`);
    }
    if (segments.length > 1 && segments.at(-1) === '') segments.pop();
    const method = req.method ?? 'GET';
    const found = matchRoute(method, segments);
    if ('allowed' in found) {
      if (found.allowed.length === 0) throw new RequestError(404, 'not_found', `No route ${method} ${url.pathname}.`);
      const allow = found.allowed.join(', ');
      throw new RequestError(405, 'invalid_request', `${method} is not allowed on ${url.pathname}; allowed: ${allow}.`, { allow });
    }
    const request: RouteRequest = {
      params: found.params,
      query: url.searchParams,
      header: (name) => {
        const value = req.headers[name.toLowerCase()];
        return Array.isArray(value) ? value.join(', ') : value;
      },
      json: async () => parseJson(await readBody(req, maxJsonBytes)),
      bytes: () => readBody(req, maxObjectBytes),
    };
    return found.route.handle(history, request);
  }

  function errorReply(error: unknown): Reply {
    if (error instanceof RequestError) return { status: error.status, json: { error: { code: error.code, message: error.message } }, headers: error.headers };
    if (error instanceof SessionHistoryError) {
      if (error.code === 'internal_error') onInternalError(error);
      const field = error.field === undefined ? {} : { field: error.field };
      return { status: STATUS[error.code], json: { error: { code: error.code, message: error.message, ...field } } };
    }
    onInternalError(error);
    return { status: 500, json: { error: { code: 'internal_error', message: INTERNAL_MESSAGE } } };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${address.port}`,
    inFlight: () => inFlight,
    close: ({ timeoutMs = 10_000 } = {}) => {
      closing ??= new Promise<void>((resolve) => {
        stopping = true;
        const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

function send(res: ServerResponse, reply: Reply): void {
  if ('bytes' in reply) {
    res.writeHead(reply.status, { ...reply.headers, 'content-length': reply.bytes.byteLength });
    res.end(reply.bytes);
  } else if ('json' in reply) {
    const body = Buffer.from(JSON.stringify(reply.json));
    res.writeHead(reply.status, { ...reply.headers, 'content-type': 'application/json; charset=utf-8', 'content-length': body.byteLength });
    res.end(body);
  } else {
    res.writeHead(reply.status);
    res.end();
  }
}

/** Reads the whole body, refusing it (413) as soon as it passes `limit` bytes; the rest is then left unread. */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array> {
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= limit) return void chunks.push(chunk);
      stop();
      reject(tooLarge(limit));
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    // A client that hangs up mid-body ends the read (an "aborted" error, then a close); nobody is left to answer.
    const onError = () => {
      stop();
      reject(new ClientGone('the client disconnected before its request body ended'));
    };
    const onClose = onError;
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

function tooLarge(limit: number): RequestError {
  return new RequestError(413, 'invalid_request', `The body is larger than ${limit} bytes.`, { connection: 'close' });
}

function parseJson(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (cause) {
    throw new RequestError(400, 'invalid_request', `The body is not valid JSON (${cause instanceof Error ? cause.message : String(cause)}).`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RequestError(400, 'invalid_request', 'The body must be a JSON object.');
  return value as Record<string, unknown>;
}
