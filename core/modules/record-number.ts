/**
 * Record numbers such as `INC-{YYYY}-{seq:5}`. The text around `{seq}` is rendered
 * in JS; it also names the counter, so a pattern with {YYYY} restarts each year. The
 * counter and the padding are SQL of the records write path (plugins/records/records.write.ts).
 */
export interface NumberParts {
  prefix: string
  suffix: string
  width: number
}

export interface NumberPattern {
  render(now: Date): NumberParts
  /** Whether `text` has the shape of a number of this pattern (any date; the counter at least its width). */
  matches(text: string): boolean
  /** The first number of this pattern at `now` (`INC-2026-00001`): an example to show people. */
  example(now: Date): string
}

const token = /\{(YYYY|YY|MM|DD|seq(?::(\d{1,2}))?)\}/g

export function compilePattern(pattern: string): NumberPattern {
  const seqTokens = [...pattern.matchAll(token)].filter((m) => m[1].startsWith('seq'))
  if (seqTokens.length !== 1) throw new Error('must contain exactly one {seq} or {seq:N} token')
  const stray = pattern.replace(token, '')
  if (/[{}]/.test(stray)) throw new Error(`has an unknown token; allowed: {YYYY} {YY} {MM} {DD} {seq:N}`)
  const width = Number(seqTokens[0][2] ?? 1)
  const at = seqTokens[0].index
  const before = pattern.slice(0, at)
  const after = pattern.slice(at + seqTokens[0][0].length)
  const fill = (text: string, d: Date) =>
    text.replace(token, (_m, t: string) => {
      const y = String(d.getUTCFullYear())
      if (t === 'YYYY') return y
      if (t === 'YY') return y.slice(2)
      if (t === 'MM') return String(d.getUTCMonth() + 1).padStart(2, '0')
      return String(d.getUTCDate()).padStart(2, '0')
    })
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const shapeOf = (text: string) =>
    text
      .split(token)
      .map((part, i) => (i % 3 === 1 ? (part === 'YYYY' ? '\\d{4}' : '\\d{2}') : i % 3 === 2 ? '' : literal(part)))
      .join('')
  const shape = new RegExp(`^${shapeOf(before)}\\d{${width},}${shapeOf(after)}$`)
  return {
    render: (now) => ({ prefix: fill(before, now), suffix: fill(after, now), width }),
    example: (now) => `${fill(before, now)}${'1'.padStart(width, '0')}${fill(after, now)}`,
    matches: (text) => shape.test(text)
  }
}
