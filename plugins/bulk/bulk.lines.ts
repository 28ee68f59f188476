/** One physical line of an NDJSON body: its 1-based number and bytes, or `tooLong` past the cap (with the line's first bytes, up to the cap, as `head`). */
export interface RawLine {
  number: number
  bytes?: Buffer
  tooLong?: true
  head?: Buffer
}

/**
 * Splits a byte stream into lines without buffering more than one line (plus one
 * chunk): a line longer than `maxBytes` is reported as `tooLong` with its first
 * `maxBytes` bytes, and skipped to its end. `\r\n` and a last line without newline are
 * handled. Yields the lines each chunk completes, together (none for a chunk inside a
 * long line): a bulk row then costs no promise of its own on the way in, only each
 * chunk does (about 1.5 µs of CPU a row less, bench/README.md). Reading is pulled, so a
 * consumer that awaits between lines holds the upload back (TCP backpressure).
 */
export async function* splitLines(input: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<RawLine[]> {
  let parts: Buffer[] = []
  let size = 0
  let skipping = false
  let number = 0
  const take = (): RawLine => {
    number++
    let bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts, size)
    parts = []
    size = 0
    if (skipping) {
      skipping = false
      return { number, tooLong: true, head: bytes }
    }
    if (bytes.length && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1)
    return { number, bytes }
  }
  for await (const chunk of input) {
    const lines: RawLine[] = []
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(0x0a, start)
      const end = nl === -1 ? chunk.length : nl
      if (!skipping) {
        // Past the cap, the part that fits is kept as the line's head (to tell why it is so long), the rest dropped.
        const fits = Math.min(end - start, maxBytes - size)
        if (fits > 0) {
          parts.push(chunk.subarray(start, start + fits))
          size += fits
        }
        if (fits < end - start) skipping = true
      }
      if (nl === -1) break
      lines.push(take())
      start = nl + 1
    }
    if (lines.length) yield lines
  }
  if (size > 0 || skipping) yield [take()]
}

const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a

/**
 * Whether a line holds a JSON object followed by the start of another (`{…}{…}` or
 * `{…} {…}`): what `curl -d @file` makes of an NDJSON file, since it strips newlines.
 * Only the structure is scanned (strings, escapes, nesting), not the values, so it
 * answers for a line cut at the cap too; a line whose first object never closes, or
 * that goes on with anything but `{`, is an ordinary malformed row.
 */
export function holdsSeveralObjects(line: Buffer): boolean {
  let i = 0
  while (i < line.length && isSpace(line[i])) i++
  if (line[i] !== 0x7b) return false
  let depth = 0
  let inString = false
  for (; i < line.length; i++) {
    const b = line[i]
    if (inString) {
      if (b === 0x5c) i++
      else if (b === 0x22) inString = false
    } else if (b === 0x22) inString = true
    else if (b === 0x7b || b === 0x5b) depth++
    else if (b === 0x7d || b === 0x5d) {
      if (--depth === 0) break
    }
  }
  if (depth !== 0) return false
  for (i++; i < line.length && isSpace(line[i]); i++);
  return line[i] === 0x7b
}

/** The outcome problem of a line that holds several objects; the same words serve the refusal of a whole body. */
export const newlinesMissingDetail = (where: string) =>
  `${where} holds several JSON objects back to back ("}{"), so the body appears to have lost its newlines: each row must be on its own line. \`curl -d @file\` strips newlines; send the file with \`curl --data-binary @file\` instead.`
