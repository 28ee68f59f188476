import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())

t.test('a query parameter with an empty name is refused like any unknown name', async (t) => {
  const unknown = await server.request('GET', '/api/v1/tokens?foo=x')
  t.equal(unknown.status, 400, 'an unknown name: 400')
  for (const path of [
    '/api/v1/tokens?=x',
    '/api/v1/tokens?=',
    '/api/v1/tokens?includeRevoked=true&=x',
    '/api/v1/records?moduleKey=incident&=x',
    '/api/v1/audit-log?moduleKey=incident&%3D=1&=2'
  ]) {
    const res = await server.request('GET', path)
    t.equal(res.status, 400, path)
    t.equal(res.body.code, unknown.body.code, `${path}: the code of an unknown name`)
    t.match(
      res.body.detail + JSON.stringify(res.body.errors ?? []),
      /not an accepted/,
      `${path}: says the name is not accepted`
    )
  }
  for (const path of ['/api/v1/tokens?', '/api/v1/tokens?&', '/api/v1/tokens?includeRevoked=true&&']) {
    t.equal((await server.request('GET', path)).status, 200, `${path}: empty separators are no parameter`)
  }
})
