/** One physical line of an NDJSON body: its 1-based number and bytes, or `tooLong` past the cap. */
export interface RawLine {
  number: number
  bytes?: Buffer
  tooLong?: true
}

/**
 * Splits a byte stream into lines without buffering more than one line (plus one
 * chunk): a line longer than `maxBytes` is reported as `tooLong` and skipped to its
 * end. `\r\n` and a last line without newline are handled. Reading is pulled, so a
 * consumer that awaits between lines holds the upload back (TCP backpressure).
 */
export async function* splitLines(input: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<RawLine> {
  let parts: Buffer[] = []
  let size = 0
  let skipping = false
  let number = 0
  const take = (): RawLine => {
    number++
    if (skipping) {
      skipping = false
      return { number, tooLong: true }
    }
    let bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts, size)
    if (bytes.length && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1)
    parts = []
    size = 0
    return { number, bytes }
  }
  for await (const chunk of input) {
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(0x0a, start)
      const end = nl === -1 ? chunk.length : nl
      if (!skipping) {
        if (size + (end - start) > maxBytes) {
          skipping = true
          parts = []
          size = 0
        } else if (end > start) {
          parts.push(chunk.subarray(start, end))
          size += end - start
        }
      }
      if (nl === -1) break
      yield take()
      start = nl + 1
    }
  }
  if (size > 0 || skipping) yield take()
}
