import { BlockList } from 'node:net'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'
import { addressRefusal } from '../../plugins/webhooks/webhooks.addresses.ts'
import { allowList } from '../../plugins/webhooks/webhooks.target.ts'

/** Address → refused (true) or reachable (false), with what it is. */
const table: Array<[string, boolean, string]> = [
  // IPv4 special-purpose ranges
  ['0.0.0.0', true, 'unspecified'],
  ['0.1.2.3', true, 'this network 0/8'],
  ['10.1.2.3', true, 'private'],
  ['100.64.0.1', true, 'CGNAT'],
  ['100.127.255.254', true, 'CGNAT, its end'],
  ['127.0.0.1', true, 'loopback'],
  ['127.255.255.254', true, 'loopback, its end'],
  ['169.254.169.254', true, 'link-local, cloud metadata'],
  ['172.16.0.1', true, 'private'],
  ['172.31.255.255', true, 'private, its end'],
  ['192.0.0.8', true, 'IETF protocol assignments'],
  ['192.0.2.10', true, 'documentation TEST-NET-1'],
  ['192.88.99.1', true, '6to4 relay anycast'],
  ['192.168.1.10', true, 'private'],
  ['198.18.0.1', true, 'benchmarking'],
  ['198.19.255.255', true, 'benchmarking, its end'],
  ['198.51.100.7', true, 'documentation TEST-NET-2'],
  ['203.0.113.10', true, 'documentation TEST-NET-3'],
  ['224.0.0.1', true, 'multicast'],
  ['239.255.255.250', true, 'multicast (SSDP)'],
  ['240.0.0.1', true, 'reserved'],
  ['255.255.255.255', true, 'broadcast'],
  ['8.8.8.8', false, 'public'],
  ['93.184.216.34', false, 'public'],
  ['100.63.255.255', false, 'just below CGNAT'],
  ['100.128.0.0', false, 'just above CGNAT'],
  ['172.15.255.255', false, 'just below 172.16/12'],
  ['172.32.0.0', false, 'just above 172.16/12'],
  ['198.17.255.255', false, 'just below benchmarking'],
  ['198.20.0.0', false, 'just above benchmarking'],
  // IPv6 special-purpose ranges
  ['::', true, 'unspecified'],
  ['::1', true, 'loopback'],
  ['fe80::1', true, 'link-local'],
  ['fe80::1%eth0', true, 'link-local with a zone'],
  ['fc00::1', true, 'unique-local'],
  ['fd12:3456::1', true, 'unique-local'],
  ['fec0::1', true, 'site-local (deprecated)'],
  ['feff::1', true, 'site-local, its end'],
  ['ff02::1', true, 'multicast'],
  ['100::1', true, 'discard-only 100::/64'],
  ['2001:db8::1', true, 'documentation'],
  ['3fff::1', true, 'documentation 3fff::/20'],
  ['2001:2::1', true, 'benchmarking'],
  ['2001:10::1', true, 'ORCHID'],
  ['2001:20::1', true, 'ORCHIDv2'],
  ['64:ff9b:1::a00:1', true, 'local-use NAT64'],
  ['5f00::1', true, 'SRv6 SIDs, outside global unicast'],
  ['2606:4700:4700::1111', false, 'public'],
  ['2a00:1450:4001:80b::200e', false, 'public'],
  // IPv4 carried in IPv6: judged by the IPv4 address
  ['::127.0.0.1', true, 'IPv4-compatible loopback'],
  ['::7f00:1', true, 'IPv4-compatible loopback, hex'],
  ['::10.0.0.1', true, 'IPv4-compatible private'],
  ['::8.8.8.8', false, 'IPv4-compatible public'],
  ['::ffff:127.0.0.1', true, 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', true, 'IPv4-mapped loopback, hex'],
  ['::ffff:169.254.169.254', true, 'IPv4-mapped metadata'],
  ['::ffff:8.8.8.8', false, 'IPv4-mapped public'],
  ['::ffff:0:7f00:1', true, 'IPv4-translated loopback'],
  ['::ffff:0:a00:1', true, 'IPv4-translated private'],
  ['::ffff:0:808:808', false, 'IPv4-translated public'],
  ['2002:7f00:1::', true, '6to4 of loopback'],
  ['2002:a9fe:a9fe::1', true, '6to4 of metadata'],
  ['2002:c0a8:101::1', true, '6to4 of private'],
  ['2002:808:808::1', false, '6to4 of public'],
  ['2001::7f00:1', true, 'Teredo with server 0.0.0.0'],
  ['2001:0:808:808::80ff:fffe', true, 'Teredo, public server, client 127.0.0.1 (inverted)'],
  ['2001:0:808:808::f5ff:fffe', true, 'Teredo, client 10.0.0.1 (inverted)'],
  ['2001:0:808:808::f7f7:f7f7', false, 'Teredo, public server and client 8.8.8.8'],
  ['64:ff9b::7f00:1', true, 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', true, 'NAT64 of metadata'],
  ['64:ff9b::808:808', false, 'NAT64 of public']
]

t.test(
  'the target classifier refuses every special-purpose address, IPv4 carried in IPv6 judged as IPv4',
  async (t) => {
    const none = new BlockList()
    for (const [address, refused, what] of table) {
      const why = addressRefusal(address, none)
      t.equal(why !== undefined, refused, `${address} (${what})${why ? `: ${why}` : ''}`)
    }
  }
)

t.test('the allow-list admits a range, also in the IPv6 forms that carry it', async (t) => {
  const allowed = allowList(['127.0.0.1/32', 'fd00::/8'])
  for (const [address, refused] of [
    ['127.0.0.1', false],
    ['::ffff:127.0.0.1', false],
    ['2002:7f00:1::', false],
    ['127.0.0.2', true],
    ['::ffff:7f00:2', true],
    ['fd00::5', false],
    ['fc00::5', true]
  ] as const) {
    t.equal(addressRefusal(address, allowed) !== undefined, refused, address)
  }
})

t.test('refuses targets at IPv6 literals that reach internal addresses, saying which and why', async (t) => {
  const server = await startTestServer({ webhooks: { allowHttp: true, allowedCidrs: [] } })
  t.teardown(() => server.close())
  for (const host of [
    '[::127.0.0.1]',
    '[::ffff:0:7f00:1]',
    '[2002:7f00:1::]',
    '[2001::7f00:1]',
    '[fec0::1]',
    '[100::1]',
    '[64:ff9b::a9fe:a9fe]',
    '[3fff::1]',
    '198.18.0.1',
    '192.0.2.1',
    '255.255.255.255'
  ]) {
    const res = await server.request('POST', '/api/v1/webhooks', {
      body: { url: `http://${host}/hook`, kinds: ['record.created'] }
    })
    t.equal(res.status, 422, host)
    t.equal(res.body.code, 'webhook.target_refused', host)
    t.match(res.body.detail, /internal address/, host)
  }
  const teredo = await server.request('POST', '/api/v1/webhooks', {
    body: { url: 'http://[2001::7f00:1]/hook', kinds: ['record.created'] }
  })
  t.match(teredo.body.detail, /Teredo form of 0\.0\.0\.0/, 'the detail names the form and the address it carries')
})
