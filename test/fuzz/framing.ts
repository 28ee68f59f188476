import type { WireRequest } from './wire.ts'

/**
 * Damage below the HTTP grammar: bytes an HTTP/1.1 parser refuses before the service sees
 * the request (control characters in header values and names, raw bytes in the target, a
 * head past Node's 16 KiB). The answer is still the service's, so it too must be a problem.
 */
export const framingDefects: Array<{ label: string; apply(w: WireRequest): void }> = [
  ...['\u0000', '\u0001', '\u000b', '\u001b', '\u007f'].flatMap((ctl) =>
    ['Idempotency-Key', 'If-Match', 'Content-Type', 'X-Fuzz'].map((name) => ({
      label: `header ${name} holds ${JSON.stringify(ctl)}`,
      apply: (w: WireRequest) => {
        w.headers = w.headers.filter(([k]) => k !== name)
        w.headers.push([name, `a${ctl}b`])
      }
    }))
  ),
  { label: 'a header name with a space', apply: (w) => void w.headers.push(['Idempotency Key', 'x']) },
  { label: 'a header name with a NUL', apply: (w) => void w.headers.push(['X-F\u0000', 'x']) },
  { label: 'a header line without a colon', apply: (w) => void w.headers.push(['X-Fuzz-No-Colon\r\nX-B', 'x']) },
  {
    label: 'a raw NUL byte in the target',
    apply: (w) => void (w.target = w.target.replace(/\/([^/]*)$/, '/\u0000$1'))
  },
  {
    label: 'a raw 0xFF byte in the target',
    apply: (w) => void (w.target = w.target.replace(/\/([^/]*)$/, '/\u00ff$1'))
  },
  { label: 'a raw space in the target', apply: (w) => void (w.target = `${w.target}?a b=1`) },
  { label: 'a 20 KiB header value', apply: (w) => void w.headers.push(['X-Fuzz', 'x'.repeat(20_000)]) },
  {
    label: 'a 20 KiB target',
    apply: (w) => void (w.target = `${w.target}${w.target.includes('?') ? '&' : '?'}fuzz=${'x'.repeat(20_000)}`)
  }
]
