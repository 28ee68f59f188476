import t from '../helpers/tap.ts'
import { sendPage } from '../helpers/pages.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { addressRanges } from '../../core/http/address-ranges.ts'
import { clientAddressOf } from '../../core/http/client-address.ts'
import { loadConfig } from '../../core/config.ts'

// The test client connects from 127.0.0.1, so it is "the load balancer" when that address is trusted.
// Ten requests per address per minute; one sign-in attempt per account and five per address.
const limits = { requestsPerMinute: 10, signInAttemptsPerMinute: 1 }
const behindProxy = await startTestServer({ limits, http: { trustProxy: ['127.0.0.1/32', '10.0.0.0/8'] } })
const direct = await startTestServer({ limits })
t.teardown(async () => {
  await behindProxy.close()
  await direct.close()
})

/** An anonymous request as one client behind the balancer: the rate limit counts it by client address. */
const from = (s: TestServer, client: string) =>
  s.request('GET', '/api/v1/modules', { token: null, headers: { 'x-forwarded-for': `${client}, 10.1.2.3` } })
const remaining = (r: { headers: Headers }) => Number(r.headers.get('x-ratelimit-remaining'))

t.test('with trustProxy on, two clients behind one proxy address get separate rate-limit windows', async (t) => {
  const a = []
  for (let i = 0; i < 11; i++) a.push(await from(behindProxy, '198.51.100.1'))
  t.same(a.map(remaining), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0])
  t.equal(a[10].status, 429, "client A's eleventh request in the minute is refused")
  const b = await from(behindProxy, '198.51.100.2')
  t.equal(b.status, 401, 'client B is not refused: it is only unauthenticated')
  t.equal(remaining(b), 9, 'client B has a window of its own')
})

t.test(
  'with trustProxy off, X-Forwarded-For is ignored: one window for the peer, whatever the header says',
  async (t) => {
    const replies = [
      await from(direct, '198.51.100.1'),
      await from(direct, '198.51.100.2'),
      await from(direct, '198.51.100.3')
    ]
    t.same(replies.map(remaining), [9, 8, 7], 'each made-up address counts against the same window')
  }
)

const signIn = (s: TestServer, client: string, i: number) =>
  sendPage(s, 'POST', '/sign-in', {
    form: {
      tenant: 'acme',
      userName: `guess-${client}-${i}`,
      password: 'wrong password here',
      next: '/settings/api-keys'
    },
    headers: { 'x-forwarded-for': client }
  })

t.test('with trustProxy on, two clients behind one proxy address are throttled apart at sign-in', async (t) => {
  // One attempt per account per minute, five per address (plugins/settings/sign-in.ts addressFactor): new user names each time.
  const a: number[] = []
  for (let i = 0; i < 6; i++) a.push((await signIn(behindProxy, '203.0.113.7', i)).status)
  t.same(a, [401, 401, 401, 401, 401, 429], 'client A is throttled after five attempts')
  t.equal((await signIn(behindProxy, '203.0.113.8', 0)).status, 401, 'client B may still try')
})

t.test('with trustProxy off, sign-in throttling counts the peer, not X-Forwarded-For', async (t) => {
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) statuses.push((await signIn(direct, `203.0.113.${10 + i}`, i)).status)
  t.same(statuses, [401, 401, 401, 401, 401, 429], 'five attempts from the peer, whatever addresses it claims')
})

t.test('the client is the last X-Forwarded-For address that is not a trusted proxy', async (t) => {
  const trusted = addressRanges(['10.0.0.0/8', '::1', '127.0.0.1'], '/http/trustProxy')
  t.equal(clientAddressOf('10.0.0.5', '198.51.100.9', trusted), '198.51.100.9')
  t.equal(
    clientAddressOf('10.0.0.5', '6.6.6.6, 198.51.100.9, 10.0.0.9', trusted),
    '198.51.100.9',
    'an address the client wrote before its own is not believed'
  )
  t.equal(
    clientAddressOf('::ffff:10.0.0.5', '198.51.100.9', trusted),
    '198.51.100.9',
    'an IPv4 peer on a dual-stack socket'
  )
  t.equal(clientAddressOf('::1', '[2001:db8::1]:4711', trusted), '2001:db8::1')
  t.equal(clientAddressOf('10.0.0.5', '198.51.100.9:4711', trusted), '198.51.100.9')
  t.equal(
    clientAddressOf('192.0.2.1', '198.51.100.9', trusted),
    '192.0.2.1',
    'a peer that is not a trusted proxy is the client'
  )
  t.equal(
    clientAddressOf('10.0.0.5', 'not-an-address, 10.0.0.6', trusted),
    '10.0.0.6',
    'a malformed entry stops at the last address a proxy vouched for'
  )
  t.equal(clientAddressOf('10.0.0.5', '', trusted), '10.0.0.5')
  t.equal(clientAddressOf('10.0.0.5', '198.51.100.9', undefined), '10.0.0.5', 'nothing trusted: the peer')
})

t.test('a trustProxy entry that is not an address or CIDR range stops start-up, naming the setting', async (t) => {
  t.throws(
    () => loadConfig({ http: { trustProxy: ['10.0.0.0/33'] } }),
    /\/http\/trustProxy has "10\.0\.0\.0\/33" is not an address or a CIDR range/
  )
  t.throws(() => loadConfig({ http: { trustProxy: ['load-balancer'] } }), /\/http\/trustProxy/)
})
