import { BlockList, isIP } from 'node:net'

/** Why `text` is not an address or a CIDR range (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7`), or undefined when it is one. */
export function rangeProblem(text: string): string | undefined {
  const [net, bits, extra] = text.split('/')
  const family = isIP(net)
  const prefix = bits === undefined ? (family === 6 ? 128 : 32) : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
  if (!family || extra !== undefined || !(prefix >= 0 && prefix <= (family === 6 ? 128 : 32)))
    return `"${text}" is not an address or a CIDR range`
  return undefined
}

/**
 * Addresses and CIDR ranges as a BlockList used as a match list (webhooks.allowedCidrs,
 * http.trustProxy); a malformed entry is a start-up error naming `setting`.
 */
export function addressRanges(ranges: readonly string[], setting: string): BlockList {
  const list = new BlockList()
  for (const r of ranges) {
    const problem = rangeProblem(r)
    if (problem) throw new Error(`Invalid configuration: ${setting} has ${problem}`)
    const [net, bits] = r.split('/')
    const family = isIP(net) === 6 ? 'ipv6' : 'ipv4'
    list.addSubnet(net, bits === undefined ? (family === 'ipv6' ? 128 : 32) : Number(bits), family)
  }
  return list
}

/** An address as BlockList compares it: an IPv4 address a dual-stack socket reports as `::ffff:a.b.c.d` is IPv4. */
export function plainAddress(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  const a = mapped ?? address
  const family = isIP(a)
  return family ? { address: a, family: family === 6 ? 'ipv6' : 'ipv4' } : undefined
}

/** Whether `address` lies in one of the ranges. */
export function inRanges(list: BlockList, address: string): boolean {
  const plain = plainAddress(address)
  return plain !== undefined && list.check(plain.address, plain.family)
}
