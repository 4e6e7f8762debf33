import type {
  AppendTranscriptInput,
  CheckpointInput,
  CommandOutcomeInput,
  ExpectedVersionInput,
  IngressFailureInput,
  NewCommandInput,
  Phase,
  RecordCompletionInput,
  RegisterSessionInput,
  RetryIngressInput,
  SessionHistory,
  StartIngressInput,
  StartSessionInput,
} from '@sessionfold/core';

/** What a route answers: a JSON body, raw bytes with their headers, or nothing. */
export type Reply =
  | { status: number; json: unknown; headers?: Record<string, string> }
  | { status: number; bytes: Uint8Array; headers: Record<string, string> }
  | { status: 204 };

/** What a route's handler gets: the path's parameters, the query, and readers of the body. */
export interface RouteRequest {
  params: Record<string, string>;
  query: URLSearchParams;
  header(name: string): string | undefined;
  /** The body as a JSON object; an empty body is `{}`. */
  json(): Promise<Record<string, unknown>>;
  /** The body's bytes, unparsed. */
  bytes(): Promise<Uint8Array>;
}

/** One line of the route table. */
export interface Route {
  method: 'GET' | 'POST';
  /** Segments starting with `:` are parameters: `/sessions/:id`. */
  path: string;
  /** The service operation it calls, for the README's table and for people reading the code. */
  operation: string;
  handle(history: SessionHistory, request: RouteRequest): Promise<Reply>;
}

const ok = (json: unknown): Reply => ({ status: 200, json });
const created = (json: unknown, isNew = true): Reply => ({ status: isNew ? 201 : 200, json });

// The bodies go to the service as they came: it validates every input and answers `invalid_request` naming the
// field, so the casts below only tell the compiler what the service will check.

/** The route table: every operation of the session history service, one route each. */
export const routes: readonly Route[] = [
  { method: 'GET', path: '/health', operation: 'health()', handle: async (history) => (await history.health(), ok({ ok: true })) },
  {
    method: 'POST',
    path: '/sessions',
    operation: 'start(body)',
    handle: async (history, request) => {
      const { value, created: isNew } = await history.start((await request.json()) as StartSessionInput);
      return created({ session: value, created: isNew }, isNew);
    },
  },
  {
    method: 'POST',
    path: '/sessions/register',
    operation: 'register(body)',
    handle: async (history, request) => created(await history.register((await request.json()) as RegisterSessionInput)),
  },
  {
    method: 'GET',
    path: '/sessions',
    operation: 'list({ phase })',
    handle: async (history, request) => {
      const phase = request.query.get('phase');
      return ok({ sessions: await history.list(phase === null ? {} : { phase: phase as Phase }) });
    },
  },
  { method: 'GET', path: '/sessions/:id', operation: 'get(id)', handle: async (history, { params }) => ok(await history.get(params['id']!)) },
  {
    method: 'POST',
    path: '/sessions/:id/transcript',
    operation: 'appendTranscript(id, body)',
    handle: async (history, request) => created(await history.appendTranscript(request.params['id']!, (await request.json()) as AppendTranscriptInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/commands',
    operation: 'enqueue(id, body)',
    handle: async (history, request) => {
      const { value, created: isNew } = await history.enqueue(request.params['id']!, (await request.json()) as NewCommandInput);
      return created({ command: value, created: isNew }, isNew);
    },
  },
  { method: 'GET', path: '/commands/heads', operation: 'commandHeads()', handle: async (history) => ok({ commands: await history.commandHeads() }) },
  {
    method: 'POST',
    path: '/commands/:commandId/claim',
    operation: 'claimCommand(commandId)',
    handle: async (history, { params }) => ok(await history.claimCommand(params['commandId']!)),
  },
  {
    method: 'POST',
    path: '/commands/:commandId/complete',
    operation: 'completeCommand(commandId, body)',
    handle: async (history, request) => ok(await history.completeCommand(request.params['commandId']!, (await request.json()) as CommandOutcomeInput)),
  },
  {
    method: 'POST',
    path: '/commands/:commandId/cancel',
    operation: 'cancelCommand(commandId)',
    handle: async (history, { params }) => ok(await history.cancelCommand(params['commandId']!)),
  },
  { method: 'POST', path: '/sessions/:id/stop', operation: 'stop(id)', handle: async (history, { params }) => ok(await history.stop(params['id']!)) },
  {
    method: 'POST',
    path: '/sessions/:id/objects',
    operation: 'stageObject(id, { fileName: X-File-Name, mediaType: Content-Type, bytes: body })',
    handle: async (history, request) => {
      const id = request.params['id']!;
      const fileName = request.header('x-file-name');
      const pendingId = await history.stageObject(id, {
        fileName: fileName === undefined ? null : decodeFileName(fileName),
        mediaType: request.header('content-type') ?? 'application/octet-stream',
        bytes: await request.bytes(),
      });
      return { status: 201, json: { pendingId }, headers: { location: `/sessions/${encodeURIComponent(id)}/objects/${pendingId}` } };
    },
  },
  {
    method: 'GET',
    path: '/sessions/:id/objects/:pendingId',
    operation: 'object(id, pendingId)',
    handle: async (history, { params }) => {
      const object = await history.object(params['id']!, params['pendingId']!);
      // The service made both header-safe: the media type has no spaces or controls, the name no `"`, `\`, `/` or `;`.
      return {
        status: 200,
        bytes: object.bytes,
        headers: {
          'content-type': object.mediaType,
          'content-disposition': `attachment; filename="${object.fileName}"`,
          'x-content-type-options': 'nosniff',
        },
      };
    },
  },
  {
    method: 'POST',
    path: '/sessions/:id/checkpoint',
    operation: 'checkpoint(id, body)',
    handle: async (history, request) => ok(await history.checkpoint(request.params['id']!, (await request.json()) as CheckpointInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/ingress/request',
    operation: 'requestIngress(id, body)',
    handle: async (history, request) => ok(await history.requestIngress(request.params['id']!, (await request.json()) as CheckpointInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/ingress/start',
    operation: 'startIngress(id, body)',
    handle: async (history, request) => ok(await history.startIngress(request.params['id']!, (await request.json()) as StartIngressInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/ingress/complete',
    operation: 'completeIngress(id, body)',
    handle: async (history, request) => ok(await history.completeIngress(request.params['id']!, (await request.json()) as ExpectedVersionInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/ingress/fail',
    operation: 'failIngress(id, body)',
    handle: async (history, request) => ok(await history.failIngress(request.params['id']!, (await request.json()) as IngressFailureInput)),
  },
  {
    method: 'POST',
    path: '/sessions/:id/ingress/retry',
    operation: 'retryIngress(id, body)',
    handle: async (history, request) => ok(await history.retryIngress(request.params['id']!, (await request.json()) as RetryIngressInput)),
  },
  {
    method: 'POST',
    path: '/ingress/release-interrupted',
    operation: 'releaseInterruptedIngress()',
    handle: async (history) => ok({ sessionIds: await history.releaseInterruptedIngress() }),
  },
  {
    method: 'POST',
    path: '/sessions/:id/complete',
    operation: 'complete(id, body)',
    handle: async (history, request) => ok(await history.complete(request.params['id']!, (await request.json()) as CheckpointInput)),
  },
  {
    method: 'POST',
    path: '/completions',
    operation: 'recordCompletion(body)',
    handle: async (history, request) => (await history.recordCompletion((await request.json()) as RecordCompletionInput), { status: 204 }),
  },
];

/** The route for `method` and `path`; `allowed` lists the methods of the path when none matches the method. */
export function matchRoute(method: string, segments: readonly string[]): { route: Route; params: Record<string, string> } | { allowed: string[] } {
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPath(route.path, segments);
    if (params === undefined) continue;
    if (route.method === method) return { route, params };
    if (!allowed.includes(route.method)) allowed.push(route.method);
  }
  return { allowed };
}

function matchPath(pattern: string, segments: readonly string[]): Record<string, string> | undefined {
  const parts = pattern.split('/').slice(1);
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of parts.entries()) {
    const segment = segments[index]!;
    if (part.startsWith(':')) params[part.slice(1)] = segment;
    else if (part !== segment) return undefined;
  }
  return params;
}

// Header values are Latin-1 on the wire: a name beyond ASCII comes percent-encoded (UTF-8), as `encodeURIComponent` makes it.
function decodeFileName(header: string): string {
  try {
    return decodeURIComponent(header);
  } catch {
    return header;
  }
}
