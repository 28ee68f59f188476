import { BlockList, isIP } from 'node:net'

/**
 * Which addresses a webhook may reach, judged by where a connection to them actually goes.
 * An IPv6 address that carries an IPv4 address (IPv4-compatible ::a.b.c.d, mapped
 * ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, 6to4 2002::/16, Teredo 2001::/32 whose client
 * is the last 32 bits inverted, NAT64 64:ff9b::/96) is judged by that IPv4 address. Otherwise
 * only IPv4 and IPv6 addresses that are globally reachable (the IANA special-purpose
 * registries) pass: IPv6 must be global unicast (2000::/3), which leaves out unspecified,
 * loopback, discard-only 100::/64, unique-local, link-local, site-local, multicast and
 * local-use NAT64 64:ff9b:1::/48, and within it documentation and benchmarking ranges.
 */

const v4Special: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved or broadcast']
]

const v6Special: Array<[string, number, string]> = [
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:10::', 28, 'ORCHID'],
  ['2001:20::', 28, 'ORCHIDv2'],
  ['2001:db8::', 32, 'documentation'],
  ['3fff::', 20, 'documentation']
]

function listOf(ranges: Array<[string, number, string]>, type: 'ipv4' | 'ipv6') {
  return ranges.map(([net, prefix, why]) => {
    const list = new BlockList()
    list.addSubnet(net, prefix, type)
    return { list, why: `${why} (${net}/${prefix})` }
  })
}
const v4Lists = listOf(v4Special, 'ipv4')
const v6Lists = listOf(v6Special, 'ipv6')

/** The 16 bytes of an IPv6 address (a zone index ignored), or undefined if it is not one. */
export function ipv6Bytes(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '')
  if (isIP(text) !== 6) return undefined
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(2).map(Number)
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const groups = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : [])
  const h = groups(head)
  const t = groups(tail)
  const all = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill(0), ...t]
  return all.flatMap((g) => [g >> 8, g & 0xff])
}

const v4 = (b: number[]) => b.join('.')
const zero = (b: number[], from: number, to: number) => b.slice(from, to).every((x) => x === 0)

/** The IPv4 addresses an IPv6 address carries (Teredo: its server and its client) and the form, or undefined. */
export function embeddedIPv4(bytes: number[]): { addresses: string[]; form: string } | undefined {
  const last = bytes.slice(12)
  if (zero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff)
    return { addresses: [v4(last)], form: 'IPv4-mapped' }
  if (zero(bytes, 0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(bytes, 10, 12))
    return { addresses: [v4(last)], form: 'IPv4-translated' }
  if (zero(bytes, 0, 12)) return { addresses: [v4(last)], form: 'IPv4-compatible' }
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return { addresses: [v4(bytes.slice(2, 6))], form: '6to4' }
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0 && bytes[3] === 0)
    return { addresses: [v4(bytes.slice(4, 8)), v4(last.map((x) => x ^ 0xff))], form: 'Teredo' }
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(bytes, 4, 12))
    return { addresses: [v4(last)], form: 'NAT64' }
  return undefined
}

/**
 * Why a webhook may not reach `address` (an IPv4 or IPv6 literal), or undefined when it is
 * globally reachable or `allowed` (the operator's allow-list) holds it or the IPv4 address it
 * carries.
 */
export function addressRefusal(address: string, allowed: BlockList): string | undefined {
  const family = isIP(address.replace(/%.*$/, ''))
  if (family === 4) {
    if (allowed.check(address, 'ipv4')) return undefined
    return v4Lists.find((l) => l.list.check(address, 'ipv4'))?.why
  }
  const bytes = ipv6Bytes(address)
  if (!bytes) return 'not an IP address'
  const bare = address.replace(/%.*$/, '')
  if (allowed.check(bare, 'ipv6')) return undefined
  if (zero(bytes, 0, 15) && bytes[15] <= 1) return bytes[15] ? 'loopback (::1)' : 'unspecified (::)'
  const inner = embeddedIPv4(bytes)
  if (inner) {
    for (const a of inner.addresses) {
      const why = addressRefusal(a, allowed)
      if (why) return `${inner.form} form of ${a}: ${why}`
    }
    return undefined
  }
  if ((bytes[0] & 0xe0) !== 0x20)
    return 'not global unicast (outside 2000::/3: loopback, unspecified, discard-only, unique-local, link-local, site-local, multicast)'
  return v6Lists.find((l) => l.list.check(bare, 'ipv6'))?.why
}
