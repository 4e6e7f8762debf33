import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compactStream, replaySession, type EventStore } from '@sessionfold/core';
import { sessionReducer, sessionStream } from '@sessionfold/core/session';
import { fileStore } from '@sessionfold/store-file';
import { postgresStore } from '@sessionfold/store-postgres';
import { sqliteStore } from '@sessionfold/store-sqlite';
import pg from 'pg';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fill, HOSTILE_TEXT, type Filled } from './fill.fixture.js';

/** Debian's browser (`apt-get install chromium`); no browser is ever downloaded. */
const CHROMIUM = process.env['SESSIONFOLD_CHROMIUM'] ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
const PG_URL = process.env['SESSIONFOLD_PG_URL'];
const BIN = fileURLToPath(new URL('../../cli/bin/sessionfold.mjs', import.meta.url));
/** Screenshots of every page, per store; the folder is ignored by git. */
const SCREENSHOTS = fileURLToPath(new URL('../screenshots/', import.meta.url));

if (!HAVE_BROWSER) {
  if (process.env['CI'] === 'true') throw new Error(`CI=true but there is no Chromium at ${CHROMIUM}: .ci/run installs it (apt-get install -y chromium)`);
  console.info(`inspector: browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set SESSIONFOLD_CHROMIUM)`);
}

let browser: Browser | undefined;
beforeAll(async () => {
  if (!HAVE_BROWSER) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update'],
  });
});
afterAll(async () => {
  await browser?.close();
});

interface StoreKind {
  name: string;
  /** `['postgres']` for the store that needs the server named by SESSIONFOLD_PG_URL. */
  tags: string[];
  /** Opens a writable store; `url` is what `--store` takes for it; `cleanup` removes it after the store is closed. */
  make(): Promise<{ store: EventStore; url: string; cleanup: () => Promise<void> }>;
}

const KINDS: StoreKind[] = [
  {
    name: 'file',
    tags: [],
    make: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sessionfold-inspect-'));
      return {
        store: await fileStore({ directory: join(dir, 'data') }),
        url: `file:${join(dir, 'data')}`,
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: 'sqlite',
    tags: [],
    make: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sessionfold-inspect-'));
      const path = join(dir, 'sessions.db');
      return { store: await sqliteStore({ path }), url: `sqlite:${path}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'postgres',
    tags: ['postgres'],
    make: async () => {
      const connectionString = PG_URL as string;
      const schema = `inspect_${process.pid}_${Date.now() % 100_000}`;
      const cleanup = async () => {
        const client = new pg.Client({ connectionString });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      };
      return {
        store: await postgresStore({ connectionString, schema }),
        url: `${connectionString}${connectionString.includes('?') ? '&' : '?'}schema=${schema}`,
        cleanup,
      };
    },
  },
];

/** Starts `sessionfold inspect` on `url` and resolves with the process and the URL it printed. */
function startInspect(url: string): Promise<{ child: ChildProcess; address: string }> {
  const env = { ...process.env };
  delete env['SESSIONFOLD_STORE'];
  const child = spawn(process.execPath, [BIN, 'inspect', '--store', url, '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /http:\/\/\S+\?token=\S+/.exec(out);
      if (found) resolve({ child, address: found[0] });
    });
    child.on('exit', (code) => reject(new Error(`sessionfold inspect exited with ${code}: ${err}`)));
  });
}

/** A GET with the headers given (including `Host`, which fetch would not let a test set). */
function get(
  address: string,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, address), { method, headers }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

const scrollWidth = (page: Page) => page.evaluate('document.documentElement.scrollWidth') as Promise<number>;

for (const kind of KINDS) {
  describe.skipIf(!HAVE_BROWSER)(`sessionfold inspect on a ${kind.name} store, in Chromium`, { tags: kind.tags }, () => {
    let filled: Filled;
    let store: EventStore;
    let cleanup: () => Promise<void>;
    let child: ChildProcess;
    let address: string;
    let origin: string;
    let token: string;
    let context: BrowserContext;
    let page: Page;
    const dialogs: string[] = [];
    const shots = join(SCREENSHOTS, kind.name);

    beforeAll(async () => {
      const made = await kind.make();
      store = made.store;
      cleanup = made.cleanup;
      filled = await fill(store);
      // One compacted session stream, so the store page has compaction to show.
      await compactStream(store, sessionStream(filled.quietId), sessionReducer);
      ({ child, address } = await startInspect(made.url));
      const parsed = new URL(address);
      origin = parsed.origin;
      token = parsed.searchParams.get('token') as string;
      context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
      mkdirSync(shots, { recursive: true });
    });
    afterAll(async () => {
      await context?.close();
      child?.kill('SIGTERM');
      await filled?.history.close();
      await store?.close();
      await cleanup?.();
    });

    it('refuses a request without the token, with a wrong one, or under another Host; the token URL signs the browser in', async () => {
      const host = new URL(origin).host;
      expect((await get(origin, '/api/v1/sessions', { host })).status).toBe(401);
      expect((await get(origin, '/', { host, accept: 'text/html' })).status).toBe(401);
      expect((await get(origin, '/api/v1/feed', { host })).status).toBe(401);
      expect((await get(origin, '/api/v1/sessions', { host, authorization: 'Bearer wrong' })).status).toBe(401);
      expect((await get(origin, '/api/v1/sessions', { host: `rebound.example:${new URL(origin).port}`, authorization: `Bearer ${token}` })).status).toBe(403);
      expect((await get(origin, '/api/v1/sessions', { host, authorization: `Bearer ${token}` }, 'POST')).status).toBe(405);
      const api = await get(origin, '/api/v1/sessions?limit=500', { host, authorization: `Bearer ${token}` });
      expect(api.status).toBe(200);
      expect(api.headers['content-security-policy']).toMatch(/script-src 'self'/);
      expect(api.headers['referrer-policy']).toBe('no-referrer');
      expect(JSON.parse(api.body)).toEqual(await filled.history.listPage({ limit: 500 }));

      const bearer = { host, authorization: `Bearer ${token}` };
      const objects = JSON.parse((await get(origin, `/api/v1/sessions/${filled.busyId}/objects`, bearer)).body) as { pendingId: string }[];
      const download = await get(origin, `/api/v1/sessions/${filled.busyId}/objects/${encodeURIComponent(objects[0]?.pendingId ?? '')}`, bearer);
      expect(download).toMatchObject({ status: 200, body: 'incident report' });
      expect(download.headers['content-disposition']).toMatch(/^attachment; filename="/);
      expect(download.headers['x-content-type-options']).toBe('nosniff');
      expect(download.headers['content-type']).toBe('text/plain');

      const response = await page.goto(address);
      expect(new URL(page.url()).search).toBe('');
      expect(response?.status()).toBe(200);
      const cookies = await context.cookies();
      expect(cookies).toHaveLength(1);
      expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', value: token });
    });

    it('lists the sessions list() returns, filters by phase and type, and searches by idempotency key', async () => {
      await page.goto(`${origin}/`);
      const shown = await page.locator('tbody tr[data-session]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')));
      const listed = (await filled.history.list()).map((record) => record.id);
      expect([...shown].sort()).toEqual([...listed].sort());
      await page.screenshot({ path: join(shots, 'sessions.png'), fullPage: true });

      await page.selectOption('select[name=phase]', 'complete');
      await Promise.all([page.waitForURL(/phase=complete/), page.click('form.filters button')]);
      // A completed session stays (the default), listed under its own id and found by its session object id.
      expect(await page.locator('tbody tr[data-session]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')))).toEqual([
        filled.completedId,
      ]);
      await page.goto(`${origin}/?search=${filled.completedObjectId}`);
      expect(await page.locator('tbody tr[data-session]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')))).toEqual([
        filled.completedId,
      ]);

      await page.goto(`${origin}/?sessionType=job`);
      expect(await page.locator('tbody tr[data-session]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')))).toEqual([filled.quietId]);

      await page.goto(`${origin}/`);
      await page.keyboard.press('/');
      await page.keyboard.type(filled.busyKey);
      await Promise.all([page.waitForURL(/search=/), page.keyboard.press('Enter')]);
      expect(await page.locator('tbody tr[data-session]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-session')))).toEqual([filled.busyId]);
    });

    it("shows a session's timeline, and its state at a revision equals replaySession folded to that revision", async () => {
      const head = (await store.read(`session-${filled.busyId}`)).revision;
      await page.goto(`${origin}/sessions/${filled.busyId}`);
      expect(await page.locator('ol.timeline li[data-revision]').count()).toBe(head);
      const revision = 4;
      await page.locator(`li[data-revision="${revision}"] summary`).click();
      await Promise.all([page.waitForURL(new RegExp(`revision=${revision}`)), page.locator(`li[data-revision="${revision}"] a`).click()]);
      const shown = JSON.parse((await page.locator('#state-json').textContent()) ?? 'null') as unknown;
      expect(shown).toEqual(JSON.parse(JSON.stringify(await replaySession(store, filled.busyId, { toRevision: revision }))));
      expect(await page.locator('ul.diff li').count()).toBeGreaterThan(0);
      // The commands come with the record `get` returns: one row each.
      expect(await page.locator('#commands tbody tr').count()).toBe((await filled.history.get(filled.busyId)).state.commands.length);
      await page.screenshot({ path: join(shots, 'session.png'), fullPage: true });
    });

    it('renders a transcript line with markup as text and runs none of it', async () => {
      await page.goto(`${origin}/sessions/${filled.busyId}`);
      const texts = await page.locator('.conversation .text').allTextContents();
      expect(texts).toContain(HOSTILE_TEXT);
      expect(await page.locator('.conversation img, .conversation script, .conversation b').count()).toBe(0);
      expect(await page.evaluate('window.__injected')).toBeUndefined();
      expect(dialogs).toEqual([]);
    });

    it('shows an event appended by another process without a reload', async () => {
      await page.goto(`${origin}/sessions/${filled.busyId}`);
      await page.evaluate('window.__sameDocument = true');
      const line = `appended while watching ${Date.now()}`;
      await filled.history.appendTranscript(filled.busyId, { role: 'assistant-message', text: line });
      await page.locator('.conversation .text', { hasText: line }).waitFor({ timeout: 15_000 });
      expect(await page.evaluate('window.__sameDocument')).toBe(true);

      await page.goto(`${origin}/live`);
      await page.locator('#feed-state', { hasText: 'Following' }).waitFor({ timeout: 10_000 });
      await filled.history.appendTranscript(filled.busyId, { role: 'user-message', text: 'and one more' });
      await page
        .locator('#feed tr', { hasText: `session-${filled.busyId}` })
        .first()
        .waitFor({ timeout: 15_000 });
      await page.screenshot({ path: join(shots, 'live.png') });
    });

    it('fits every page in a 375 px wide screen, in light and dark', async () => {
      await page.goto(`${origin}/store?verify=1`);
      expect(await page.locator('#verify-result').textContent()).toMatch(/^No errors/);
      const reported = (await store.status?.())?.details ?? {};
      expect(reported['compactedStreams']).toBe(1);
      expect(await page.locator('#compacted-streams').textContent()).toBe(String(reported['compactedStreams']));
      await page.screenshot({ path: join(shots, 'store.png'), fullPage: true });
      const phone = await (browser as Browser).newContext({ viewport: { width: 375, height: 800 }, colorScheme: 'dark' });
      try {
        const small = await phone.newPage();
        await small.goto(address);
        for (const path of ['/', `/sessions/${filled.busyId}?revision=3`, '/live', '/store']) {
          await small.goto(`${origin}${path}`);
          expect(await scrollWidth(small), path).toBeLessThanOrEqual(375);
        }
        await small.goto(`${origin}/sessions/${filled.busyId}?revision=3`);
        await small.screenshot({ path: join(shots, 'session-phone-dark.png'), fullPage: true });
      } finally {
        await phone.close();
      }
    });
  });
}

describe('sessionfold inspect as a command', () => {
  it('has help with examples, refuses a bad port with exit 2 and a missing store with exit 3, and ends with exit 0 on SIGTERM', async () => {
    const runCli = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
        });
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const help = await runCli(['inspect', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Examples:');
    expect(help.stdout).toContain('--host');
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-inspect-'));
    try {
      expect((await runCli(['inspect', '--port', 'eighty', '-s', `file:${dir}`])).code).toBe(2);
      expect((await runCli(['inspect', '-s', `sqlite:${join(dir, 'missing.db')}`])).code).toBe(3);
      const store = await fileStore({ directory: join(dir, 'data') });
      await store.close();
      const { child } = await startInspect(`file:${join(dir, 'data')}`);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
