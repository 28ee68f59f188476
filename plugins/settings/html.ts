/**
 * A tagged template that escapes every interpolated value unless it is already `SafeHtml`
 * (the result of another `html` template). Pages are built only with it, so a value from
 * the database or the request can never become markup by forgetting to escape it.
 */

export class SafeHtml {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for element content and for quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => entities[c])
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  // `cond && html\`…\`` leaves false behind when the condition fails: it renders as nothing.
  if (value === undefined || value === null || value === false) return ''
  return escapeHtml(String(value))
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]
  return new SafeHtml(out)
}
