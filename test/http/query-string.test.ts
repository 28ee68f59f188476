import qs from 'qs'
import t from '../helpers/tap.ts'
import { parseQuery } from '../../core/http/query-string.ts'

// parseQuery must read every query string exactly as qs does (what Feathers' Koa transport used before).

t.test('reads the usual query strings as qs does', async (t) => {
  for (const text of [
    'moduleKey=incident&limit=50',
    'moduleKey=incident&cursor=AwE1ZmQ.abc_-',
    'updatedSince=2026-11-23T10:00:00.000Z&state=reported,closed',
    'a',
    'a=',
    'a=b=c',
    '&a=1&&b=2&',
    '=x',
    'a=1&a=2',
    'toString=1',
    '__proto__=x',
    'constructor=y',
    'hasOwnProperty=1&b=2',
    'payload[severity]=high',
    'payload%5Bseverity%5D=high',
    'title=a+b',
    'title=%E2%9C%93',
    'bad=%E0%A4%A',
    'a.b=1',
    'a[]=1&a[]=2',
    'moduleKey=incident&' + Array.from({ length: 1001 }, (_, i) => `p${i}=1`).join('&')
  ])
    t.same(parseQuery(text), qs.parse(text), text.slice(0, 60))
})

t.test('reads generated query strings as qs does', async (t) => {
  const alphabet = 'ab_-.~:,=&%+[]5B0'
  let seed = 7
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  let fast = 0
  for (let i = 0; i < 5000; i++) {
    const text = Array.from(
      { length: 1 + Math.floor(next() * 24) },
      () => alphabet[Math.floor(next() * alphabet.length)]
    ).join('')
    const ours = parseQuery(text)
    if (!/[%+[\]]/.test(text)) fast++
    if (JSON.stringify(ours) !== JSON.stringify(qs.parse(text)))
      t.fail(`differs on ${JSON.stringify(text)}: ${JSON.stringify(ours)} vs ${JSON.stringify(qs.parse(text))}`)
  }
  t.ok(fast > 500, `${fast} of the strings took the plain path`)
})

t.test('gives a plain object qs would give, with the prototype of one', async (t) => {
  const out = parseQuery('limit=5')
  t.equal(Object.getPrototypeOf(out), Object.prototype)
  t.same(out, { limit: '5' })
})
