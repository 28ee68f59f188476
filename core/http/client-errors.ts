import { maxHeaderSize } from 'node:http'
import type { Socket } from 'node:net'
import { ApiError, toProblem } from '../errors/index.ts'
import { newTraceId } from './trace.ts'
import type { ProblemKind } from '../errors/kinds.ts'
import { logger } from '../logger.ts'

/** The request line ends within the head limit (its CRLF is there): else the target alone filled the head. */
function requestLineEnded(raw: Buffer | undefined): boolean {
  if (!raw) return true
  const end = raw.indexOf('\r\n')
  return end !== -1 && end < maxHeaderSize
}

/** What Node's HTTP parser refused, by its error code (and, past the head limit, whether the request line alone passed it). */
function refusal(
  code: string | undefined,
  raw: Buffer | undefined
): { kind: ProblemKind; code: string; detail: string } {
  if (code === 'HPE_HEADER_OVERFLOW' && !requestLineEnded(raw))
    return {
      kind: 'uri-too-long',
      code: 'request.uri_too_long',
      detail: 'The request line alone exceeds 16 KiB: send long values in a body instead of the query string.'
    }
  if (code === 'HPE_HEADER_OVERFLOW')
    return {
      kind: 'headers-too-large',
      code: 'request.headers_too_large',
      detail: 'The request line and headers exceed 16 KiB.'
    }
  return {
    kind: 'bad-request',
    code: 'request.malformed_http',
    detail:
      'The request is not valid HTTP/1.1: a header holds a control character or the request target a raw byte outside URL syntax (percent-encode it).'
  }
}

/**
 * Answers requests Node's HTTP parser refuses before any middleware sees them (control
 * bytes in a header, raw bytes in the target, a head past 16 KiB) with a problem like
 * every other error, instead of a bare `400 Bad Request` without body or trace id.
 */
export function answerClientErrors(errorsUrl: () => string) {
  return (err: Error & { code?: string; rawPacket?: Buffer }, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy()
    const { kind, code, detail } = refusal(err.code, err.rawPacket)
    const traceId = newTraceId()
    logger.debug('refused by the HTTP parser', { traceId, code: err.code, error: err.message })
    const { body: problem } = toProblem(new ApiError(kind, code, detail), traceId, errorsUrl())
    const body = JSON.stringify(problem)
    socket.end(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Trace-Id: ${traceId}\r\nConnection: close\r\n\r\n${body}`
    )
  }
}
