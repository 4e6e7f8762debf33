/** The page's stylesheet, served as `/assets/style.css` (the CSP allows no inline style): light and dark, down to 320 px. */
export const STYLE = `
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0; --accent: #0b5cad; --panel: #f6f8fa;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --ins: #dafbe1; --del: #ffebe9; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #30363d; --accent: #58a6ff; --panel: #161b22;
  --ok: #3fb950; --warn: #d29922; --bad: #f85149; --ins: #12361f; --del: #4a1d20; } }
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--fg); }
body { overflow-wrap: anywhere; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible, main:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; } .skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px 8px; z-index: 1; }
header { display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline; justify-content: space-between; padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
header nav { display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: baseline; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
.store { color: var(--muted); font-size: 13px; }
main { padding: 12px 16px 40px; max-width: 1400px; margin: 0 auto; }
h1 { font-size: 22px; margin: 8px 0 12px; } h2 { font-size: 18px; margin: 18px 0 8px; } h3 { font-size: 15px; margin: 12px 0 6px; }
.muted { color: var(--muted); font-size: 13px; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th a { color: var(--fg); white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: end; margin-bottom: 8px; }
.filters label { display: flex; flex-direction: column; font-size: 13px; color: var(--muted); min-width: 0; }
.filters input[type=search] { width: min(340px, 100%); }
input, select, button { font: inherit; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px; max-width: 100%; }
button { background: var(--panel); cursor: pointer; }
.phase { display: inline-block; padding: 0 8px; border-radius: 10px; border: 1px solid var(--line); font-size: 12px; white-space: nowrap; }
.phase-active { color: var(--ok); } .phase-ingress_failed { color: var(--bad); } .phase-complete { color: var(--muted); } .phase-ingress_pending, .phase-ingress_running { color: var(--warn); }
.tag { font-size: 11px; border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; color: var(--muted); }
.pages { display: flex; gap: 16px; margin: 10px 0; }
.grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 0 24px; }
@media (max-width: 900px) { .grid { grid-template-columns: minmax(0, 1fr); } }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px; overflow: auto; max-height: 480px; font-size: 12px; margin: 6px 0; white-space: pre-wrap; }
ol.timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
ol.timeline li { padding: 4px 0 4px 10px; }
ol.timeline li.selected { background: var(--panel); border-left: 3px solid var(--accent); margin-left: -2px; }
ol.timeline li.compacted { color: var(--muted); font-style: italic; }
.rev { font-family: ui-monospace, monospace; color: var(--muted); } .type { font-weight: 600; }
summary { cursor: pointer; }
.revision { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.revision input[type=range] { flex: 1 1 160px; min-width: 0; }
.revision input[type=number] { width: 8em; }
ul.diff { list-style: none; padding: 0; font-size: 13px; } ul.diff li { padding: 2px 0; }
del { background: var(--del); text-decoration: line-through; } ins { background: var(--ins); text-decoration: none; }
ol.conversation { list-style: none; padding: 0; display: flex; flex-direction: column; gap: 8px; }
.turn { border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; max-width: 80ch; }
.turn .role { font-size: 12px; color: var(--muted); } .turn .text { margin: 2px 0 0; white-space: pre-wrap; }
.role-user { align-self: flex-end; background: var(--panel); } .role-system { font-style: italic; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px 16px; } dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
#feed tr.fresh { animation: fresh 1.5s ease-out; } @keyframes fresh { from { background: var(--ins); } to { background: transparent; } }
@media (prefers-reduced-motion: reduce) { #feed tr.fresh { animation: none; } }
`;
