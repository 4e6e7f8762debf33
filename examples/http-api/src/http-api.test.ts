import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EventStore, openSessionHistory, type SessionHistory } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpApi, type HttpApiOptions, listen } from './http-api.js';
import { openStore } from './open-store.js';

const EXAMPLE_DIR = fileURLToPath(new URL('..', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-http-api-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A real server on 127.0.0.1 and an ephemeral port, over a file store in a fresh directory. */
type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>;

async function serve(options: HttpApiOptions = {}): Promise<{ api: HttpApi; call: Call }> {
  const store = await fileStore({ directory: tempDir() });
  const history = await openSessionHistory({ store });
  const api = await listen(history, options);
  cleanups.push(async () => {
    await api.close();
    await history.close();
    await store.close();
  });
  return { api, call: (method, path, body, headers) => call(`${api.url}${path}`, method, body, headers) };
}

interface Answer {
  status: number;
  headers: Headers;
  /** The parsed JSON body, read field by field in the assertions. */
  json: any;
}

async function call(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}

const startBody = (key = randomUUID()) => ({ idempotencyId: key, startedAt: new Date().toISOString(), sessionType: 'conversation' });

describe('the session history over HTTP', () => {
  it('takes a session through its whole life, one route after another', async () => {
    const { call } = await serve();
    const key = randomUUID();
    const started = await call('POST', '/sessions', startBody(key));
    expect(started.status).toBe(201);
    expect(started.json.created).toBe(true);
    const session = started.json.session;
    expect(session).toMatchObject({ phase: 'active', version: 1 });
    const again = await call('POST', '/sessions', startBody(key));
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ created: false, session: { id: session.id } });
    const id: string = session.id;

    expect((await call('POST', `/sessions/${id}/transcript`, { role: 'user-message', text: 'Hello' })).status).toBe(201);
    const staged = await call('POST', `/sessions/${id}/objects`, 'notes', { 'content-type': 'text/plain', 'x-file-name': 'notes.txt' });
    expect(staged).toMatchObject({ status: 201, json: { pendingId: 'pending:2' } });
    expect(staged.headers.get('location')).toBe(`/sessions/${id}/objects/pending:2`);

    const enqueued = await call('POST', `/sessions/${id}/commands`, { idempotencyId: 'reply-1', kind: 'message', payload: { text: 'hi' } });
    expect(enqueued).toMatchObject({ status: 201, json: { created: true, command: { status: 'pending', sequence: 1 } } });
    const command = enqueued.json.command;
    expect((await call('POST', `/sessions/${id}/commands`, { idempotencyId: 'reply-1', kind: 'message' })).json).toMatchObject({ created: false });
    expect((await call('GET', '/commands/heads')).json.commands.map((c: { id: string }) => c.id)).toEqual([command.id]);
    expect((await call('POST', `/commands/${command.id}/claim`)).json.status).toBe('processing');
    expect((await call('POST', `/commands/${command.id}/complete`, { outcome: { sent: true } })).json).toMatchObject({
      status: 'complete',
      outcome: { sent: true },
    });
    const second = (await call('POST', `/sessions/${id}/commands`, { idempotencyId: 'reply-2', kind: 'message' })).json.command;
    expect((await call('POST', `/commands/${second.id}/cancel`)).json.cancelRequested).toBe(true);
    await call('POST', `/commands/${second.id}/claim`);
    await call('POST', `/commands/${second.id}/complete`);

    const read = await call('GET', `/sessions/${id}`);
    expect(read.json.state.transcript).toHaveLength(1);
    expect((await call('GET', '/sessions?phase=active')).json.sessions.map((s: { id: string }) => s.id)).toContain(id);

    const saved = await call('POST', `/sessions/${id}/checkpoint`, { expectedVersion: 1, state: { sessionType: 'conversation', pendingTurn: false } });
    expect(saved.json.version).toBe(2);
    const requested = await call('POST', `/sessions/${id}/ingress/request`, {
      expectedVersion: 2,
      state: { sessionType: 'conversation', sessionObjectId: `archive-${id}` },
    });
    expect(requested.json.phase).toBe('ingress_pending');
    const attempt = await call('POST', `/sessions/${id}/ingress/start`, { expectedVersion: 3, provenanceId: 'run-1' });
    const failed = await call('POST', `/sessions/${id}/ingress/fail`, {
      expectedVersion: attempt.json.version,
      stage: 'upload',
      code: 'input_too_large',
      message: 'too big',
    });
    expect(failed.json.phase).toBe('ingress_failed');
    const retried = await call('POST', `/sessions/${id}/ingress/retry`, { expectedVersion: failed.json.version, state: requested.json.state });
    expect(retried.json).toMatchObject({ phase: 'ingress_pending', ingressFailureCount: 0 });
    const attempt2 = await call('POST', `/sessions/${id}/ingress/start`, { expectedVersion: retried.json.version, provenanceId: 'run-2' });
    expect((await call('POST', '/ingress/release-interrupted')).json).toEqual({ sessionIds: [id] });
    const attempt3 = await call('POST', `/sessions/${id}/ingress/start`, { expectedVersion: attempt2.json.version + 1, provenanceId: 'run-3' });
    expect(attempt3.json.phase).toBe('ingress_in_progress');
    const done = await call('POST', `/sessions/${id}/ingress/complete`, { expectedVersion: attempt3.json.version });
    expect(done).toMatchObject({ status: 200, json: { phase: 'complete' } });
    // Kept after completion (the default): readable by its id, and by its session object id.
    const kept = await call('GET', `/sessions/${id}`);
    expect(kept).toMatchObject({ status: 200, json: { id, phase: 'complete' } });
    expect((await call('GET', `/sessions/archive-${id}`)).json).toEqual(kept.json);

    // A registered session, stopped, then completed directly; and a receipt made elsewhere.
    const registeredId = randomUUID();
    const registered = await call('POST', '/sessions/register', { id: registeredId, startedAt: new Date().toISOString(), state: { sessionType: 'import' } });
    expect(registered).toMatchObject({ status: 201, json: { id: registeredId, phase: 'active' } });
    const stopped = await call('POST', `/sessions/${registeredId}/stop`);
    expect(stopped.json.phase).toBe('ingress_pending');
    const completed = await call('POST', `/sessions/${registeredId}/complete`, {
      expectedVersion: stopped.json.version,
      state: { sessionType: 'import', sessionObjectId: `archive-${registeredId}` },
    });
    expect(completed.json.phase).toBe('complete');
    expect((await call('POST', '/completions', { sessionObjectId: 'archive-elsewhere' })).status).toBe(204);
    // Kept sessions are listed under their own ids; the receipt made elsewhere under its session object.
    const listed = (await call('GET', '/sessions?phase=complete')).json.sessions.map((s: { id: string }) => s.id);
    expect(listed.sort()).toEqual([id, registeredId, 'archive-elsewhere'].sort());
    expect(await call('GET', '/health')).toMatchObject({ status: 200, json: { ok: true } });
  });

  it('answers every kind of error with its status and { error: { code, message } }', async () => {
    const { call } = await serve();
    const { id } = (await call('POST', '/sessions', startBody())).json.session;

    const badJson = await call('POST', '/sessions', '{"idempotencyId": ');
    expect(badJson.status).toBe(400);
    expect(badJson.json.error.code).toBe('invalid_request');
    expect(badJson.json.error.message).toMatch(/^The body is not valid JSON/);
    expect(await call('POST', '/sessions', '[1, 2]')).toMatchObject({
      status: 400,
      json: { error: { code: 'invalid_request', message: 'The body must be a JSON object.' } },
    });

    const invalid = await call('POST', '/sessions', { ...startBody(), startedAt: 'yesterday' });
    expect(invalid).toMatchObject({ status: 400, json: { error: { code: 'invalid_request', field: 'startedAt' } } });
    expect(invalid.json.error.message).toMatch(/startedAt must be an RFC 3339 timestamp/);
    expect((await call('GET', '/sessions?phase=sleeping')).json.error.code).toBe('invalid_request');

    expect(await call('GET', `/sessions/${randomUUID()}`)).toEqual(
      expect.objectContaining({ status: 404, json: { error: { code: 'not_found', message: 'Session not found.' } } }),
    );
    expect((await call('POST', `/commands/${randomUUID()}/claim`)).status).toBe(404);

    const conflict = await call('POST', `/sessions/${id}/checkpoint`, { expectedVersion: 5, state: {} });
    expect(conflict).toMatchObject({ status: 409, json: { error: { code: 'state_conflict', message: 'Expected session version 5, found 1.' } } });
    await call('POST', '/sessions/register', { id, startedAt: new Date().toISOString(), state: {} }).then((answer) => {
      expect(answer).toMatchObject({ status: 409, json: { error: { code: 'state_conflict' } } });
    });

    expect(await call('GET', '/nowhere')).toMatchObject({ status: 404, json: { error: { code: 'not_found', message: 'No route GET /nowhere.' } } });
    const wrongMethod = await call('DELETE', `/sessions/${id}`);
    expect(wrongMethod).toMatchObject({ status: 405, json: { error: { code: 'invalid_request' } } });
    expect(wrongMethod.headers.get('allow')).toBe('GET');

    const huge = await call('POST', `/sessions/${id}/transcript`, { role: 'user-message', text: 'x'.repeat(2 * 1024 * 1024) });
    expect(huge).toMatchObject({ status: 413, json: { error: { code: 'invalid_request', message: 'The body is larger than 1048576 bytes.' } } });
    expect((await call('GET', `/sessions/${id}`)).json.state.transcript).toEqual([]);
  });

  it("gives back an object's exact bytes with its media type and a safe file name", async () => {
    const { api, call } = await serve();
    const { id } = (await call('POST', '/sessions', startBody())).json.session;
    const bytes = randomBytes(200_000);
    const upload = await fetch(`${api.url}/sessions/${id}/objects`, {
      method: 'POST',
      body: bytes,
      headers: { 'content-type': 'image/png', 'x-file-name': encodeURIComponent('holiday "best"; été.png') },
    });
    expect(upload.status).toBe(201);
    const { pendingId } = (await upload.json()) as { pendingId: string };

    const download = await fetch(`${api.url}/sessions/${id}/objects/${pendingId}`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="holiday__best____t_.png"');
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

    // A media type that is not one is served as bytes, never as what it claims.
    const odd = await fetch(`${api.url}/sessions/${id}/objects`, { method: 'POST', body: 'plain', headers: { 'content-type': 'text html' } });
    const oddId = ((await odd.json()) as { pendingId: string }).pendingId;
    const oddDownload = await fetch(`${api.url}/sessions/${id}/objects/${oddId}`);
    expect(oddDownload.headers.get('content-type')).toBe('application/octet-stream');
    expect(oddDownload.headers.get('content-disposition')).toBe('attachment; filename="uploaded-object"');
    expect(await oddDownload.text()).toBe('plain');

    expect((await call('GET', `/sessions/${id}/objects/pending:99`)).status).toBe(404);
    expect((await call('GET', `/sessions/${id}/objects/object-1`)).json.error.code).toBe('invalid_request');
  });

  it('answers 50 concurrent requests on one session, each exactly once', async () => {
    const { call } = await serve();
    const { id } = (await call('POST', '/sessions', startBody())).json.session;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        n % 2 === 0
          ? call('POST', `/sessions/${id}/transcript`, { role: 'user-message', text: `line ${n}` })
          : call('POST', `/sessions/${id}/commands`, { idempotencyId: `command-${n}`, kind: 'message', payload: { n } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill(201));
    const record = (await call('GET', `/sessions/${id}`)).json;
    expect(record.state.transcript.map((line: { content: string }) => line.content).sort()).toEqual(
      Array.from({ length: 25 }, (_, i) => `line ${i * 2}`).sort(),
    );
    const sequences = answers.filter((_, n) => n % 2 === 1).map((answer) => answer.json.command.sequence);
    expect(sequences.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect((await call('GET', '/commands/heads')).json.commands).toHaveLength(1);
  });
});

describe('a storage failure', () => {
  it('is a 500 with the fixed message, and the error goes to the server, not the client', async () => {
    const store = await fileStore({ directory: tempDir() });
    const history = await openSessionHistory({ store });
    const seen: unknown[] = [];
    const api = await listen(history, { onInternalError: (error) => seen.push(error) });
    cleanups.push(async () => {
      await api.close();
      await history.close();
    });
    const { id } = (await call(`${api.url}/sessions`, 'POST', startBody())).json.session;
    await store.close();
    const answer = await call(`${api.url}/sessions/${id}/transcript`, 'POST', { role: 'user-message', text: 'lost' });
    expect(answer).toMatchObject({
      status: 500,
      json: { error: { code: 'internal_error', message: 'An unexpected Session History storage error occurred.' } },
    });
    expect(seen).toHaveLength(1);
    expect((seen[0] as Error).cause).toBeInstanceOf(Error);
  });
});

describe('a client that disconnects mid-request', () => {
  it('is not an internal error: nothing is reported, and the server goes on answering', async () => {
    const seen: unknown[] = [];
    const { api, call } = await serve({ onInternalError: (error) => seen.push(error) });
    const { port } = new URL(api.url);
    const socket = connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    // Half of the body its header announces, then the connection is cut.
    socket.write('POST /sessions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"idempotencyId":');
    while (api.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    socket.destroy();
    while (api.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(seen).toEqual([]);
    expect((await call('POST', '/sessions', startBody())).status).toBe(201);
  });
});

describe('the store URL', () => {
  it.each([
    ['file:', (dir: string) => `file:${dir}`, (dir: string) => `file store in ${dir}`],
    ['a plain directory', (dir: string) => dir, (dir: string) => `file store in ${dir}`],
    ['sqlite:', (dir: string) => `sqlite:${join(dir, 'sessions.db')}`, (dir: string) => `SQLite store ${join(dir, 'sessions.db')}`],
  ])('%s opens a store the service runs on', async (_, url, description) => {
    const dir = tempDir();
    const opened = await openStore(url(dir));
    expect(opened.description).toBe(description(dir));
    const history = await openSessionHistory({ store: opened.store });
    const { created } = await history.start(startBody());
    expect(created).toBe(true);
    await history.close();
    await opened.store.close();
  });
});

describe('the server process', () => {
  it('on SIGTERM refuses new connections, finishes the request in flight, closes the store and exits 0', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=sessionfold-source', 'src/main.ts', `file:${dir}`], {
      cwd: EXAMPLE_DIR,
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => void child.kill('SIGKILL'));
    const output = collect(child);
    const first = await output.line(/^sessionfold HTTP API on (http:\/\/127\.0\.0\.1:\d+) \(file store in (.+)\)$/);
    const url = first[1]!;
    expect(first[2]).toBe(dir);
    const { id } = (await call(`${url}/sessions`, 'POST', startBody())).json.session;

    // A request whose body is still on its way when the signal comes: `100-continue` tells when the server has it.
    const body = JSON.stringify({ role: 'assistant-message', text: 'written during shutdown' });
    const slow = httpRequest(`${url}/sessions/${id}/transcript`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' },
    });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      slow.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      });
      slow.on('error', reject);
    });
    const received = new Promise((resolve) => slow.once('continue', resolve));
    slow.flushHeaders();
    await received;
    slow.write(body.slice(0, 10));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect((await output.line(/^SIGTERM: no new connections; finishing (\d+) request\(s\) in flight$/))[1]).toBe('1');
    await expect(fetch(`${url}/health`)).rejects.toThrow();

    slow.end(body.slice(10));
    const answer = await answered;
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.text)).toMatchObject({ role: 'assistant-message', text: 'written during shutdown' });
    expect(await exited).toBe(0);
    expect(output.lines.at(-1)).toBe('closed the service and the store');
    expect(output.stderr()).toBe('');

    // The writer lock was released: the store opens for writing, and the request that finished is in it.
    const store: EventStore = await fileStore({ directory: dir });
    const history: SessionHistory = await openSessionHistory({ store });
    try {
      expect((await history.get(id)).state['transcriptText']).toBe('[assistant-message]\nwritten during shutdown');
    } finally {
      await history.close();
      await store.close();
    }
  });
});

/** The child's stdout as lines, with a wait for the first line matching a pattern. */
function collect(child: ChildProcess) {
  const lines: string[] = [];
  let stderr = '';
  let waiting: (() => void)[] = [];
  let rest = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    lines.push(...parts);
    for (const wake of waiting.splice(0)) wake();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.once('exit', () => {
    waiting.forEach((wake) => wake());
    waiting = [];
  });
  return {
    lines,
    stderr: () => stderr,
    async line(pattern: RegExp): Promise<RegExpExecArray> {
      for (;;) {
        for (const line of lines) {
          const match = pattern.exec(line);
          if (match) return match;
        }
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the server exited before printing ${pattern}:\n${lines.join('\n')}\n${stderr}`);
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
    },
  };
}
