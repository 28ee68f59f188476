import t from '../helpers/tap.ts'
import { scrubSecrets, secretShapes } from '../../core/log-redaction.ts'

const token = 'svc_k_' + 'A1b2C3d4E5'.repeat(4)
const line = (msg: string) => JSON.stringify({ level: 'error', msg })

t.test(
  'a token is scrubbed wherever a message puts it: after a line break or tab (escaped in the JSON line) or URL-encoded',
  async (t) => {
    for (const msg of [
      `bad token:\n${token}`,
      `bad token:\t${token}`,
      `GET /x?q=%20${token}`,
      `Authorization:\nBearer ${token}`,
      `auth=%20Bearer%20${token}`,
      `plain ${token}`
    ]) {
      const out = scrubSecrets(line(msg))
      t.notOk(out.includes(token.slice(6)), `${JSON.stringify(msg.slice(0, 18))}… comes out without the token`)
      t.notOk(
        secretShapes.some((s) => s.test(out)),
        'and the suite check finds no secret shape in it'
      )
      t.ok(
        secretShapes.some((s) => s.test(line(msg))),
        'while the suite check finds the unscrubbed one'
      )
    }
  }
)

t.test('a word that merely ends in a token prefix is left alone', async (t) => {
  const msg = line('visa_card and svc_kitchen stay')
  t.equal(scrubSecrets(msg), msg)
})

t.test('hostile text is scrubbed in time proportional to its length, not its square', async (t) => {
  // A run of letters and dashes was tried as a URL scheme from each of its characters: 16 KB took 1.3 s.
  const hostile = line('/api/v1/' + 'a-'.repeat(8192) + '=@')
  const longer = line('/api/v1/' + 'a-'.repeat(32768) + '=@')
  const time = (s: string) => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < 5; i++) scrubSecrets(s)
    return Number(process.hrtime.bigint() - start) / 5e6
  }
  time(hostile)
  const small = time(hostile)
  const large = time(longer)
  t.ok(small < 100, `16 KB of letters and dashes scrubbed in ${small.toFixed(1)} ms`)
  // Four times the text: linear work is about four times the time; quadratic would be sixteen.
  t.ok(large < Math.max(small * 8, 40), `64 KB in ${large.toFixed(1)} ms (16 KB: ${small.toFixed(1)} ms)`)
  t.ok(
    scrubSecrets(line('postgres://user:hunter2secret@db:5432/x')).includes('postgres://user:[REDACTED]@db'),
    'a URL password is still scrubbed'
  )
})
