// The page's script: live updates from the change feed, the revision slider, keyboard shortcuts. Every page works
// without it; it only saves reloads. It never builds markup from data: fresh sections come as server-escaped HTML.

interface Change {
  position: number;
  stream: string;
  revision: number;
  type: string;
  recordedAt: string;
}

const page = document.body.dataset['page'];

/** Replaces every `[data-live]` section of the page with the same section of a fresh copy of it. */
async function refreshSections(): Promise<void> {
  const response = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html');
  for (const section of document.querySelectorAll<HTMLElement>('[data-live]')) {
    const replacement = fresh.getElementById(section.id);
    // Sections the reader opened stay open.
    if (replacement === null) continue;
    const open = new Set([...section.querySelectorAll('details[open]')].map((details) => details.closest('[data-revision]')?.getAttribute('data-revision')));
    for (const details of replacement.querySelectorAll('details')) {
      if (open.has(details.closest('[data-revision]')?.getAttribute('data-revision'))) details.open = true;
    }
    section.replaceWith(document.importNode(replacement, true));
  }
}

let pending: number | undefined;
function refreshSoon(): void {
  if (pending !== undefined) return;
  pending = window.setTimeout(() => {
    pending = undefined;
    refreshSections().catch(() => undefined);
  }, 250);
}

function cell(text: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  return td;
}

function follow(): void {
  const lag = document.getElementById('lag');
  const feedBody = document.getElementById('feed') as HTMLTableSectionElement | null;
  const feedState = document.getElementById('feed-state');
  const sessionId = page === 'session' ? decodeURIComponent(location.pathname.split('/')[2] ?? '') : undefined;
  let received = Number(lag?.dataset['last'] ?? 0);
  let end = received;
  const showLag = () => {
    if (lag !== null) lag.textContent = String(Math.max(0, end - received));
    const endText = document.getElementById('end');
    if (endText !== null) endText.textContent = String(end);
  };
  const from = page === 'live' ? `?from=${received + 1}` : '';
  const source = new EventSource(`/api/v1/feed${from}`);
  source.addEventListener('open', () => {
    if (feedState !== null) feedState.textContent = 'Following the change feed.';
  });
  source.addEventListener('error', () => {
    if (feedState !== null) feedState.textContent = 'The change feed is not connected; retrying…';
  });
  source.addEventListener('status', (message) => {
    end = Math.max(end, (JSON.parse((message as MessageEvent<string>).data) as { lastPosition: number }).lastPosition);
    showLag();
  });
  source.addEventListener('change', (message) => {
    const change = JSON.parse((message as MessageEvent<string>).data) as Change;
    received = Math.max(received, change.position);
    end = Math.max(end, received);
    showLag();
    if (feedBody !== null) {
      const row = document.createElement('tr');
      row.className = 'fresh';
      for (const text of [String(change.position), change.stream, String(change.revision), change.type, change.recordedAt]) row.append(cell(text));
      feedBody.prepend(row);
      while (feedBody.rows.length > 500) feedBody.deleteRow(-1);
    }
    if (page === 'sessions' && (change.stream.startsWith('session-') || change.stream === 'catalog')) refreshSoon();
    if (sessionId !== undefined && change.stream === `session-${sessionId}`) refreshSoon();
  });
}

/** The slider and the number box name the same revision; letting go of the slider shows it. */
function revisionPicker(): void {
  const form = document.querySelector<HTMLFormElement>('form.revision');
  if (form === null) return;
  const range = form.querySelector<HTMLInputElement>('input[type=range]');
  const number = form.querySelector<HTMLInputElement>('input[type=number]');
  if (range === null || number === null) return;
  // One field is submitted: the slider mirrors the box.
  range.removeAttribute('name');
  range.addEventListener('input', () => {
    number.value = range.value;
  });
  range.addEventListener('change', () => form.requestSubmit());
  number.addEventListener('input', () => {
    range.value = number.value;
  });
}

/** `/` focuses the search box (outside a text field), as on most listing pages. */
function shortcuts(): void {
  document.addEventListener('keydown', (event) => {
    const target = event.target as HTMLElement | null;
    if (event.key !== '/' || target?.closest('input, select, textarea')) return;
    const search = document.querySelector<HTMLInputElement>('input[type=search]');
    if (search === null) return;
    event.preventDefault();
    search.focus();
  });
}

revisionPicker();
shortcuts();
follow();
