/** Markup built by `html`: trusted, inserted as is into another `html` template. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What a template may interpolate: text (escaped), markup, numbers, lists of either, or nothing. */
export type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` made safe inside an element or a quoted attribute: every stored string reaches the page through here. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] as string);
}

function render(value: Interpolated): string {
  if (value instanceof Html) return value.text;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** A template whose interpolations are escaped unless they are themselves `html` markup. */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let text = strings[0] as string;
  for (let index = 0; index < values.length; index++) text += render(values[index] as Interpolated) + (strings[index + 1] as string);
  return new Html(text);
}

/** A JSON value as indented text for a `<pre>` (escaped by the template that shows it). */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}
