import { lookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { BlockList, isIP } from 'node:net'
import { addressRanges } from '../../core/http/address-ranges.ts'
import { addressRefusal } from './webhooks.addresses.ts'

/**
 * Where a webhook may be sent, and the sending itself. A target is checked when a
 * subscription is created or changed and again before every attempt (a name may resolve
 * elsewhere later: DNS rebinding): https only unless allowed, every address the name
 * resolves to must be public unless an operator allow-lists its range, and the request
 * goes to the address that was checked, never through a second lookup. No redirect is
 * followed, the response is read up to a bound and the whole exchange has a deadline.
 */
export interface TargetRules {
  allowHttp: boolean
  allowedCidrs: readonly string[]
  dnsTimeoutMs: number
}

export class TargetRefused extends Error {}

/** The operator's allow-list as a BlockList (used as a match list); a malformed entry is a start-up error. */
export function allowList(cidrs: readonly string[]): BlockList {
  return addressRanges(cidrs, '/webhooks/allowedCidrs')
}

export interface CheckedTarget {
  url: URL
  /** The checked address the request goes to. */
  address: string
  family: 4 | 6
}

/** Checks a target URL and resolves it to an address it may reach, or throws TargetRefused saying why. */
export async function checkTarget(text: string, rules: TargetRules, allowed: BlockList): Promise<CheckedTarget> {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new TargetRefused(`"${text}" is not an absolute URL.`)
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && rules.allowHttp))
    throw new TargetRefused(
      `The target must use https${rules.allowHttp ? ' or http' : ''}, not ${url.protocol.replace(':', '')}.`
    )
  if (url.username || url.password)
    throw new TargetRefused(
      'The target URL must not carry a user name or password; use the signature to authenticate deliveries.'
    )
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: Array<{ address: string; family: number }>
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }]
  else {
    let timer: NodeJS.Timeout | undefined
    try {
      addresses = await Promise.race([
        lookup(host, { all: true, verbatim: true }),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), rules.dnsTimeoutMs)))
      ])
    } catch (err) {
      throw new TargetRefused(
        `The host ${host} could not be resolved (${(err as Error).message === 'timeout' ? `no answer within ${rules.dnsTimeoutMs} ms` : ((err as NodeJS.ErrnoException).code ?? 'lookup failed')}).`
      )
    } finally {
      clearTimeout(timer)
    }
  }
  if (!addresses.length) throw new TargetRefused(`The host ${host} resolves to no address.`)
  const bad = addresses.flatMap((a) => {
    const why = addressRefusal(a.address, allowed)
    return why ? [`${a.address} (${why})`] : []
  })
  if (bad.length) {
    throw new TargetRefused(
      `The host ${host} resolves to ${bad.join(', ')}: a private, loopback, link-local or otherwise internal address, or one reserved for documentation, benchmarking or special use, which webhooks may not reach (an operator can allow a range with webhooks.allowedCidrs).`
    )
  }
  return { url, address: addresses[0].address, family: addresses[0].family === 6 ? 6 : 4 }
}

export interface SendResult {
  statusCode?: number
  latencyMs: number
  excerpt?: string
  error?: string
}

/** Kept of a response body for the delivery log. */
export const excerptBytes = 4096
/** Read of a response body at most; the connection is closed past it. */
export const readLimitBytes = 65_536

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 })
}

/** POSTs `body` to the checked address (Host and TLS name from the URL), within `timeoutMs`; never throws. */
export function send(
  target: CheckedTarget,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  signal?: AbortSignal
): Promise<SendResult> {
  const started = performance.now()
  const secure = target.url.protocol === 'https:'
  return new Promise((resolve) => {
    let settled = false
    const done = (r: Omit<SendResult, 'latencyMs'>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...r, latencyMs: Math.round(performance.now() - started) })
    }
    const req = (secure ? https : http).request({
      host: target.address,
      family: target.family,
      port: target.url.port || (secure ? 443 : 80),
      path: `${target.url.pathname}${target.url.search}`,
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      ...(secure ? { servername: target.url.hostname.replace(/^\[|\]$/g, '') } : {}),
      headers: {
        ...headers,
        host: target.url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'records-webhooks/1'
      },
      signal
    })
    const timer = setTimeout(() => {
      req.destroy(new Error(`no complete response within ${timeoutMs} ms`))
    }, timeoutMs)
    req.on('error', (err) => done({ error: err.name === 'AbortError' ? 'aborted' : err.message }))
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      let read = 0
      res.on('data', (chunk: Buffer) => {
        if (read < excerptBytes) chunks.push(chunk.subarray(0, excerptBytes - read))
        read += chunk.length
        // Enough read: the rest is not wanted, and the connection is not reused.
        if (read >= readLimitBytes) {
          res.destroy()
          done({ statusCode: res.statusCode, excerpt: Buffer.concat(chunks).toString('utf8') })
        }
      })
      res.on('end', () => done({ statusCode: res.statusCode, excerpt: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', (err) =>
        done({ statusCode: res.statusCode, error: err.message, excerpt: Buffer.concat(chunks).toString('utf8') })
      )
    })
    req.end(body)
  })
}
