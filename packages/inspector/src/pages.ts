import { LIST_SORT_KEYS, type ListSortKey, type SessionCommand, type SessionPage, type SessionRecord } from '@sessionfold/core';
import type { StoreStatus, VerifyReport } from '@sessionfold/core/kernel';
import { PHASES } from '@sessionfold/core/session';
import type { DiffEntry } from './diff.js';
import { html, prettyJson, type Html } from './html.js';
import type { SessionParts, StateAtRevision, TimelinePage } from './queries.js';

/** The listing's query as the sessions page shows it in its form and links. */
export interface SessionsQuery {
  phase?: string | undefined;
  sessionType?: string | undefined;
  search?: string | undefined;
  sort: ListSortKey;
  order: 'asc' | 'desc';
  cursor?: string | undefined;
}

const COLUMN_TITLES: Record<ListSortKey, string> = {
  id: 'Session',
  phase: 'Phase',
  sessionType: 'Type',
  version: 'Version',
  startedAt: 'Started',
  lastActivityAt: 'Last activity',
  openCommands: 'Open commands',
  failureCount: 'Failures',
};

/** The whole document around one page's content: navigation, the store's name, the stylesheet and the script. */
export function layout(title: string, store: string, current: 'sessions' | 'live' | 'store' | 'session', main: Html): string {
  const link = (href: string, name: string, page: typeof current) => html`<a href="${href}"${current === page ? html` aria-current="page"` : ''}>${name}</a>`;
  return `<!doctype html>${html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer"><title>${title} · sessionfold inspect</title><link rel="stylesheet" href="/assets/style.css"><script type="module" src="/assets/app.js"></script></head><body data-page="${current}"><a class="skip" href="#main">Skip to content</a><header><nav aria-label="Pages"><strong>sessionfold</strong> ${link('/', 'Sessions', 'sessions')} ${link('/live', 'Live', 'live')} ${link('/store', 'Store', 'store')}</nav><span class="store" title="Opened read-only">${store} · read-only</span></header><main id="main" tabindex="-1">${main}</main></body></html>`}`;
}

function queryString(query: SessionsQuery, change: Partial<SessionsQuery>): string {
  const merged: Record<string, string | undefined> = { ...query, ...change };
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(merged)) if (value !== undefined && value !== '') params.set(key, value);
  return `/?${params}`;
}

/** The sessions page: filters, a table sortable by every column, and a link to the next page. */
export function sessionsPage(query: SessionsQuery, page: SessionPage): Html {
  const header = LIST_SORT_KEYS.map((key) => {
    const active = query.sort === key;
    const order = active && query.order === 'desc' ? 'asc' : 'desc';
    const arrow = active ? (query.order === 'desc' ? ' ▼' : ' ▲') : '';
    const sort = active ? (query.order === 'desc' ? 'descending' : 'ascending') : 'none';
    return html`<th scope="col" aria-sort="${sort}"><a href="${queryString(query, { sort: key, order, cursor: undefined })}">${COLUMN_TITLES[key]}${arrow}</a></th>`;
  });
  const rows = page.sessions.map(
    (row) =>
      html`<tr data-session="${row.id}"><td class="id"><a href="/sessions/${encodeURIComponent(row.id)}">${row.id}</a>${row.receipt ? html` <span class="tag">receipt</span>` : ''}${row.idempotencyKey === null ? '' : html`<div class="muted">key ${row.idempotencyKey}</div>`}</td><td><span class="phase phase-${row.phase}">${row.phase}</span></td><td>${row.sessionType ?? '—'}</td><td class="num">${row.version}</td><td>${time(row.startedAt)}</td><td>${time(row.lastActivityAt)}</td><td class="num">${row.openCommands}</td><td class="num">${row.failureCount}</td></tr>`,
  );
  const phases = PHASES.map((phase) => html`<option value="${phase}"${query.phase === phase ? html` selected` : ''}>${phase}</option>`);
  const next = page.nextCursor === null ? '' : html`<a rel="next" href="${queryString(query, { cursor: page.nextCursor })}">Next page</a>`;
  const first = query.cursor === undefined ? '' : html`<a href="${queryString(query, { cursor: undefined })}">First page</a>`;
  const from = Number(query.cursor ?? 0);
  return html`<h1>Sessions</h1>
<form class="filters" method="get" action="/" role="search">
<label>Phase <select name="phase"><option value="">any</option>${phases}</select></label>
<label>Type <input type="text" name="sessionType" value="${query.sessionType ?? ''}" placeholder="any" size="12"></label>
<label>Search <input type="search" name="search" value="${query.search ?? ''}" placeholder="id, idempotency key or session object id"></label>
<input type="hidden" name="sort" value="${query.sort}"><input type="hidden" name="order" value="${query.order}">
<button type="submit">Filter</button>
</form>
<div id="sessions" data-live="sessions">
<p class="muted" id="count">${page.total === 0 ? 'No sessions match.' : `${from + 1}–${from + page.sessions.length} of ${page.total} sessions`}</p>
<div class="scroll"><table><thead><tr>${header}</tr></thead><tbody>${rows}</tbody></table></div>
<nav class="pages" aria-label="Pages of sessions">${first} ${next}</nav>
</div>`;
}

/** The page of one session: its record, timeline, state at a revision, transcript, commands and objects. */
export function sessionPage(record: SessionRecord, timeline: TimelinePage | undefined, state: StateAtRevision | undefined, parts: SessionParts): Html {
  const id = record.id;
  const base = `/sessions/${encodeURIComponent(id)}`;
  const transcript = Array.isArray(record.state['transcript']) ? (record.state['transcript'] as { role?: unknown; content?: unknown; boxId?: unknown }[]) : [];
  return html`<h1>Session <span class="id">${id}</span></h1>
<p><span class="phase phase-${record.phase}">${record.phase}</span> · version ${record.version} · started ${time(record.startedAt)} · last activity ${time(record.updatedAt)}</p>
<div class="grid">
<section aria-labelledby="h-timeline" id="timeline" data-live="timeline">${timeline === undefined ? html`<h2 id="h-timeline">Timeline</h2><p class="muted">Known only by its completion receipt: no events are kept.</p>` : timelineSection(base, timeline, state?.revision)}</section>
<section aria-labelledby="h-state" id="state">${timeline === undefined ? '' : stateSection(base, timeline, state)}</section>
</div>
<section aria-labelledby="h-transcript" id="transcript" data-live="transcript"><h2 id="h-transcript">Transcript</h2>${
    transcript.length === 0
      ? html`<p class="muted">No transcript.</p>`
      : html`<ol class="conversation">${transcript.map((line) => html`<li class="turn role-${String(line.role)}"><span class="role">${String(line.role)}</span><p class="text">${String(line.content ?? '')}</p></li>`)}</ol>`
  }</section>
<section aria-labelledby="h-commands" id="commands" data-live="commands"><h2 id="h-commands">Commands</h2>${commandsTable(parts.commands)}</section>
<section aria-labelledby="h-objects" id="objects" data-live="objects"><h2 id="h-objects">Staged objects</h2>${
    parts.objects.length === 0
      ? html`<p class="muted">No staged objects.</p>`
      : html`<ul>${parts.objects.map((object) => html`<li><a href="/api/v1/sessions/${encodeURIComponent(id)}/objects/${encodeURIComponent(object.pendingId)}" download>${object.fileName}</a> <span class="muted">${object.mediaType} · ${object.size} bytes · sha256 ${object.sha256.slice(0, 12)}…</span></li>`)}</ul>`
  }</section>
<details id="record"><summary>The record as <code>get</code> returns it</summary><pre>${prettyJson(record)}</pre></details>`;
}

function timelineSection(base: string, page: TimelinePage, selected: number | undefined): Html {
  const marker =
    page.compactedAt > 0 ? html`<li class="compacted">Compacted at revision ${page.compactedAt}: the events up to it are covered by a snapshot.</li>` : '';
  const events = page.events.map(
    (event) =>
      html`<li${event.revision === selected ? html` class="selected"` : ''} data-revision="${event.revision}"><details><summary><span class="rev">#${event.revision}</span> <span class="type">${event.type}</span> <span class="muted">pos ${event.position} · ${time(event.recordedAt)}</span></summary><pre>${prettyJson(event.data)}</pre><a href="${base}?revision=${event.revision}#state">State at revision ${event.revision}</a></details></li>`,
  );
  const after = page.events[0] === undefined ? undefined : page.events[0].revision - 1;
  const next = page.nextAfter === null ? '' : html`<a rel="next" href="${base}?after=${page.nextAfter}#timeline">Next events</a>`;
  const first = after !== undefined && after > page.compactedAt ? html`<a href="${base}#timeline">Oldest retained events</a>` : '';
  return html`<h2 id="h-timeline">Timeline</h2><p class="muted">${page.revision} revisions; oldest retained first.</p><ol class="timeline">${marker}${events}</ol><nav class="pages" aria-label="Pages of events">${first} ${next}</nav>`;
}

function stateSection(base: string, timeline: TimelinePage, state: StateAtRevision | undefined): Html {
  const min = Math.max(1, timeline.compactedAt);
  const value = state?.revision ?? timeline.revision;
  const form = html`<form class="revision" method="get" action="${base}#state"><label for="revision">Revision</label> <input id="revision" type="range" name="revision" min="${min}" max="${timeline.revision}" value="${value}"> <input type="number" name="revision" aria-label="Revision number" min="${min}" max="${timeline.revision}" value="${value}"> <button type="submit">Show</button></form>`;
  if (state === undefined) {
    return html`<h2 id="h-state">State at a revision</h2>${form}<p class="muted">Pick an event of the timeline or a revision to see the record folded up to it.</p>`;
  }
  return html`<h2 id="h-state">State at revision ${state.revision}</h2>${form}
<h3>Changes ${state.previousRevision === null ? 'from nothing' : `since revision ${state.previousRevision}`}</h3>${diffList(state.diff)}
<details open><summary>Record at revision ${state.revision}</summary><pre id="state-json">${prettyJson(state.record)}</pre></details>`;
}

function diffList(diff: readonly DiffEntry[]): Html {
  if (diff.length === 0) return html`<p class="muted">No change.</p>`;
  return html`<ul class="diff">${diff.map(
    (change) =>
      html`<li><code>${change.path}</code>${change.before === undefined ? '' : html` <del>${JSON.stringify(change.before)}</del>`}${change.after === undefined ? '' : html` <ins>${JSON.stringify(change.after)}</ins>`}</li>`,
  )}</ul>`;
}

function commandsTable(commands: readonly SessionCommand[]): Html {
  if (commands.length === 0) return html`<p class="muted">No commands.</p>`;
  const rows = commands.map(
    (command) =>
      html`<tr><td class="num">${command.sequence}</td><td>${command.kind}</td><td>${command.status}</td><td>${command.worker ?? '—'}</td><td>${command.leaseUntil === undefined ? '—' : time(command.leaseUntil)}</td><td><details><summary>payload, outcome</summary><pre>${prettyJson({ payload: command.payload, outcome: command.outcome ?? null })}</pre></details></td></tr>`,
  );
  return html`<div class="scroll"><table><thead><tr><th scope="col">#</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Claimed by</th><th scope="col">Lease until</th><th scope="col">Data</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** The live page: the change feed as it arrives, and how far behind the store's end the page is. */
export function livePage(lastPosition: number): Html {
  return html`<h1>Live</h1>
<p>Lag: <output id="lag" data-last="${lastPosition}">0</output> changes behind the store's end (position <span id="end">${lastPosition}</span>).</p>
<p class="muted" id="feed-state" role="status">Connecting to the change feed…</p>
<div class="scroll"><table><thead><tr><th scope="col">Position</th><th scope="col">Stream</th><th scope="col">Revision</th><th scope="col">Type</th><th scope="col">Recorded</th></tr></thead><tbody id="feed"></tbody></table></div>`;
}

/**
 * The store's compaction state from what its `status()` reports: the streams with a snapshot and the revisions
 * their snapshots cover (the events compaction dropped); for the file store the log's dead bytes, the sealed
 * segments waiting to be cleaned and who cleans them; for SQLite the free pages the dropped rows left.
 */
function compactionSection(status: StoreStatus | undefined): Html {
  const details = status?.details ?? {};
  const number = (key: string): number | undefined => {
    const value = details[key];
    return typeof value === 'number' ? value : undefined;
  };
  const streams = number('compactedStreams');
  const events = number('compactedEvents');
  if (status === undefined || streams === undefined) return html`<p class="muted">This store reports no compaction state.</p>`;
  const facts: Html[] = [
    html`<dt>Streams with a snapshot</dt><dd id="compacted-streams">${streams}</dd>`,
    html`<dt>Events covered by snapshots</dt><dd id="compacted-events">${events ?? '—'}</dd>`,
  ];
  const dead = number('deadBytes');
  const waiting = number('segmentsToClean');
  if (dead !== undefined) facts.push(html`<dt>Dead bytes in the log</dt><dd id="dead-bytes">${bytes(dead)}</dd>`);
  if (waiting !== undefined) facts.push(html`<dt>Sealed segments to clean</dt><dd id="segments-to-clean">${waiting}</dd>`);
  if (dead !== undefined) facts.push(html`<dt>Cleaning</dt><dd>${cleaning(details)}</dd>`);
  const free = number('freeBytes');
  if (free !== undefined)
    facts.push(
      html`<dt>Free pages</dt><dd id="free-bytes">${bytes(free)} <span class="muted">reused by later writes; <code>VACUUM</code> gives them back</span></dd>`,
    );
  return html`<dl class="facts">${facts}</dl>`;
}

/** Who reclaims a file store's dead bytes: its writer, in the background, or nobody while no writer runs. */
function cleaning(details: StoreStatus['details']): string {
  const refused = details['writesRefused'];
  if (typeof refused === 'string') return `stopped: the writer refuses writes (${refused})`;
  const pid = details['lockHolderPid'];
  if (typeof pid !== 'number') return 'waits for a writer: no process holds the store open for writing';
  return `by the writer (pid ${pid}), in the background after a write, for each sealed segment at least half dead`;
}

/** The store page: its status, compaction, and the last `verify` report with file and line for each problem. */
export function storePage(status: StoreStatus | undefined, report: VerifyReport | undefined, canVerify: boolean): Html {
  const problems = report?.problems.map(
    (problem) =>
      html`<tr><td>${problem.severity}</td><td>${problem.code}</td><td>${problem.file ?? problem.table ?? '—'}</td><td class="num">${problem.line ?? '—'}</td><td>${problem.message}</td></tr>`,
  );
  const verify =
    report === undefined
      ? html`<p class="muted">Not verified yet.</p>`
      : html`<p id="verify-result">${report.ok ? 'No errors' : 'Errors found'}: checked ${report.checked.streams} streams, ${report.checked.records} records, ${report.checked.snapshots} snapshots, ${report.checked.blobs} blobs.</p>${
          report.problems.length === 0
            ? ''
            : html`<div class="scroll"><table><thead><tr><th scope="col">Severity</th><th scope="col">Code</th><th scope="col">File</th><th scope="col">Line</th><th scope="col">Problem</th></tr></thead><tbody>${problems}</tbody></table></div>`
        }`;
  const details = status === undefined ? {} : status.details;
  return html`<h1>Store</h1>
<section aria-labelledby="h-status"><h2 id="h-status">Status</h2>${
    status === undefined
      ? html`<p class="muted">This store reports no status.</p>`
      : html`<dl class="facts"><dt>Kind</dt><dd>${status.kind}</dd><dt>Last position</dt><dd id="last-position">${status.lastPosition}</dd><dt>Size</dt><dd>${bytes(details['logBytes'] ?? details['fileBytes'] ?? details['totalBytes'])}</dd><dt>Format version</dt><dd>${String(details['formatVersion'] ?? details['schemaVersion'] ?? '—')}</dd><dt>Holding back</dt><dd>${status.holdingBack.length === 0 ? 'nothing' : `${status.holdingBack.length} open transaction(s)`}</dd></dl><details><summary>Details</summary><pre>${prettyJson(status)}</pre></details>`
  }</section>
<section aria-labelledby="h-compaction"><h2 id="h-compaction">Compaction</h2>${compactionSection(status)}</section>
<section aria-labelledby="h-verify"><h2 id="h-verify">Verify</h2>${
    canVerify
      ? html`<form method="get" action="/store"><input type="hidden" name="verify" value="1"><button type="submit">Verify now</button> <span class="muted">reads everything; writes nothing</span></form>${verify}`
      : html`<p class="muted">This store cannot verify itself.</p>`
  }</section>`;
}

/** The page a refused request gets: how to come in. */
export function refusedPage(): string {
  return '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sessionfold inspect</title></head><body><h1>Not signed in</h1><p>Open the URL with the token that <code>sessionfold inspect</code> printed.</p></body></html>';
}

function time(value: string): Html {
  return value === '' ? html`—` : html`<time datetime="${value}">${value.replace('T', ' ').replace(/\.\d+Z$|Z$/, 'Z')}</time>`;
}

function bytes(value: unknown): string {
  if (typeof value !== 'number') return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit++;
  }
  return `${unit === 0 ? size : size.toFixed(1)} ${units[unit]}`;
}
