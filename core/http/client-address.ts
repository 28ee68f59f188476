import type { BlockList } from 'node:net'
import type { Middleware } from 'koa'
import { addressRanges, inRanges, plainAddress } from './address-ranges.ts'

/** One `X-Forwarded-For` entry as an address: brackets and an IPv4 port (`[::1]`, `192.0.2.1:4711`) taken off. */
function forwardedAddress(entry: string): string | undefined {
  const text = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)?.[1]
  const v4WithPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text)?.[1]
  const a = bracketed ?? v4WithPort ?? text
  return plainAddress(a)?.address
}

/**
 * The client's address. Without trusted proxies, or when the peer is not one, it is the
 * peer's: a client cannot choose it by sending `X-Forwarded-For`. When the peer is a trusted
 * proxy, `X-Forwarded-For` is read from the right (each proxy appends the address it was
 * called from) and the first address that is not a trusted proxy is the client; a malformed
 * entry stops the walk at the last address a trusted proxy vouched for.
 */
export function clientAddressOf(peer: string, forwardedFor: string, trusted: BlockList | undefined): string {
  const own = plainAddress(peer)?.address ?? peer
  if (!trusted || !inRanges(trusted, own) || !forwardedFor) return own
  let client = own
  for (const entry of forwardedFor.split(',').reverse()) {
    const address = forwardedAddress(entry)
    if (!address) break
    client = address
    if (!inRanges(trusted, address)) break
  }
  return client
}

/**
 * Sets `ctx.ip`, the one client address every reader uses (the request rate limit counts
 * anonymous calls by it, sign-in throttling counts attempts by it), from http.trustProxy.
 * First in the chain, before anything reads it. Koa's own `app.proxy` is left off: it would
 * also take the scheme and host from headers, which `publicUrl` says instead.
 */
export const clientAddress = (trustProxy: readonly string[]): Middleware => {
  const trusted = trustProxy.length ? addressRanges(trustProxy, '/http/trustProxy') : undefined
  return (ctx, next) => {
    ctx.request.ip = clientAddressOf(ctx.req.socket.remoteAddress ?? '', ctx.get('x-forwarded-for'), trusted)
    return next()
  }
}
