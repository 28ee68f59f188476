import { problems } from '../errors/index.ts'

/** One entity tag as sent (RFC 9110 §8.8.3): `"3"` or `W/"3"`; `opaque` keeps its quotes. */
export interface EntityTag {
  weak: boolean
  opaque: string
}

/** `"<value>"` or `W/"<value>"`: the ETag a response carries. */
export function entityTag(value: string | number, weak = false): string {
  return `${weak ? 'W/' : ''}"${value}"`
}

/** Whether every character of an opaque tag's inside is an `etagc`: %x21, %x23-7E or obs-text (not `"`, no space or control). */
function isEtagc(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff)
}

/**
 * An If-Match or If-None-Match value as `*` or its list of entity tags, or undefined when it is
 * not one (an unquoted `3`, a `*` inside a list, a stray character). A scanner, not a split on
 * commas: a comma may stand inside an opaque tag. Empty list elements are skipped (RFC 9110 §5.6.1).
 */
export function parseEntityTags(value: string): '*' | EntityTag[] | undefined {
  if (value.trim() === '*') return '*'
  const tags: EntityTag[] = []
  let i = 0
  const skip = (chars: string) => {
    while (i < value.length && chars.includes(value[i])) i++
  }
  for (;;) {
    skip(' \t,')
    if (i >= value.length) break
    const weak = value.startsWith('W/', i)
    if (weak) i += 2
    if (value[i] !== '"') return undefined
    const close = value.indexOf('"', i + 1)
    if (close < 0) return undefined
    for (let j = i + 1; j < close; j++) if (!isEtagc(value.charCodeAt(j))) return undefined
    tags.push({ weak, opaque: value.slice(i, close + 1) })
    i = close + 1
    skip(' \t')
    if (i < value.length && value[i] !== ',') return undefined
  }
  return tags.length ? tags : undefined
}

/** RFC 9110 §8.8.3.2: strong comparison needs both tags strong; weak comparison looks at the opaque part only. */
function same(a: EntityTag, b: EntityTag, comparison: 'strong' | 'weak'): boolean {
  return a.opaque === b.opaque && (comparison === 'weak' || (!a.weak && !b.weak))
}

function asTag(etag: string): EntityTag {
  const weak = etag.startsWith('W/')
  return { weak, opaque: weak ? etag.slice(2) : etag }
}

/**
 * The `If-Match` of a change to a representation whose ETag is `current` (RFC 9110 §13.1.1):
 * true when it is absent, `*` or lists `current`; false answers 412. The comparison is strong,
 * as the RFC requires (a weak tag never passes), unless `weak` is asked for: SCIM's ETags are
 * weak and RFC 7644 §3.14 has clients send them back in If-Match. A value that is no entity-tag
 * list (`3` without quotes, `*, "3"`) is refused with 400 `request.malformed_if_match` rather than
 * read as naming no version: the client meant a condition and would otherwise see a 412 it
 * cannot explain.
 */
export function ifMatchPasses(
  header: string | undefined,
  current: string,
  comparison: 'strong' | 'weak' = 'strong'
): boolean {
  if (header === undefined) return true
  const tags = ifMatchTags(header)
  if (tags === '*') return true
  const now = asTag(current)
  return tags.some((t) => same(t, now, comparison))
}

/** Whether an If-Match value (already passed ifMatchPasses) names a weak tag, which a strong comparison never matches. */
export function hasWeakTag(header: string): boolean {
  const tags = ifMatchTags(header)
  return tags !== '*' && tags.some((t) => t.weak)
}

/** An If-Match value parsed, or the 400 that ifMatchPasses describes. */
export function ifMatchTags(header: string): '*' | EntityTag[] {
  const tags = parseEntityTags(header)
  if (tags === undefined)
    throw problems.badRequest(
      'request.malformed_if_match',
      `If-Match must be * or a list of ETags as the API sent them, quotes included (e.g. "3"); got ${JSON.stringify(header.slice(0, 100))}.`
    )
  return tags
}

/**
 * The `If-None-Match` of a GET or HEAD of a representation whose ETag is `current` (RFC 9110
 * §13.1.2): true when `*` or a listed tag matches by weak comparison, and the answer is 304.
 * Absent, empty or malformed, it is ignored and the representation is sent in full: a wrong
 * condition on a read costs one full answer, never a wrong one. `Cache-Control: no-cache` on
 * the request does not change it (that directive is for caches; fetch() adds it to every
 * conditional request).
 */
export function ifNoneMatchHits(header: string | undefined, current: string): boolean {
  if (!header) return false
  const tags = parseEntityTags(header)
  if (tags === undefined) return false
  if (tags === '*') return true
  const now = asTag(current)
  return tags.some((t) => same(t, now, 'weak'))
}
