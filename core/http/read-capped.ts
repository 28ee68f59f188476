import type { IncomingMessage } from 'node:http'

/**
 * Reads a request body up to `maxBytes`; undefined when it is larger (the rest is
 * drained unread so the caller can still answer 413). Rejects with `onAborted()` when
 * the client hangs up mid-body. Not `for await`: leaving that loop early destroys the
 * request and its socket, so a client streaming a chunked body would see a reset
 * instead of the 413.
 */
export function readCapped(
  req: IncomingMessage,
  maxBytes: number,
  onAborted: () => Error
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = []
  return new Promise((resolve, reject) => {
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      req.off('data', onData)
      req.resume()
      resolve(undefined)
    }
    req.on('data', onData)
    req.once('end', () => resolve(Buffer.concat(chunks)))
    req.once('error', reject)
    req.once('close', () => {
      if (!req.complete) reject(onAborted())
    })
  })
}
