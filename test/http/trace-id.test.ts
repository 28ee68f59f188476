import t from '../helpers/tap.ts'
import { requestTraceId } from '../../core/http/trace.ts'

t.test('a request without a traceparent gets a new trace id of 32 hex digits, never the same twice', async (t) => {
  // Well past one fill of the id pool (256 ids), so a refill that repeated or skipped would show.
  const ids = Array.from({ length: 2_000 }, () => requestTraceId(''))
  t.equal(ids.filter((id) => /^[0-9a-f]{32}$/.test(id) && !/^0+$/.test(id)).length, ids.length, 'each a W3C trace id')
  t.equal(new Set(ids).size, ids.length, 'all distinct')
})

t.test("a request with a valid traceparent keeps the caller's trace id", async (t) => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  t.equal(requestTraceId(`00-${traceId}-00f067aa0ba902b7-01`), traceId)
  t.match(requestTraceId('00-00000000000000000000000000000000-00f067aa0ba902b7-01'), /^[0-9a-f]{32}$/)
  t.not(requestTraceId('00-00000000000000000000000000000000-00f067aa0ba902b7-01'), '0'.repeat(32))
})
