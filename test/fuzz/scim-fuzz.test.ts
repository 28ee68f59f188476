// tap: own process (a fuzz campaign: its length follows FUZZ_RUNS and it sets its own timeout, which an area's shared process would cap)
import t from '../helpers/tap.ts'
import { scimErrorIssues } from './oracles.ts'
import { leaked, mediaType, parseJson, percentEncode, Probe, type Judgement } from './probe.ts'
import { fuzzEnv, fuzzProperty } from './property.ts'
import {
  fittingScimTypes,
  hostileFilters,
  renderScim,
  scimCases,
  ScimSchemaView,
  showScim,
  type ScimCase,
  type ScimOp
} from './scim-cases.ts'
import { seededFuzzServer } from './seed.ts'
import type { WireReply } from './wire.ts'

/**
 * Schema-driven SCIM fuzzing (docs/fuzzing.md): the resource types and their attributes come
 * from /api/scim/v2/ResourceTypes and /Schemas; each type gets creates, replaces, PATCHes,
 * lists with filters built from its attributes (and hostile ones) and reads, valid or with
 * hostile mutations. Every answer must be a 2xx, or a SCIM error (application/scim+json,
 * the Error schema, `status` a string, a fitting `scimType` on a 400) that changed nothing;
 * never a 5xx; within the bound.
 *
 * FUZZ_RUNS cases per operation (default 25), FUZZ_SEED, FUZZ_OPS (a regex on names such as
 * `createScimUser`, `listScimGroup`, and `scimHardCases`).
 */
const runs = fuzzEnv.runs
// 2 s: an honest SCIM answer (a page of users, a PATCH of 1,000 operations) takes well under
// a second on a busy 2-core machine; a quadratic PATCH or a runaway filter takes many.
const boundMs = fuzzEnv.boundMs(2_000)
// A slow answer is waited for this long, so its repro says how slow it was.
const patienceMs = 30_000
const selected = (name: string) => !fuzzEnv.only || fuzzEnv.only.test(name)

const { server, token, snapshots, pools } = await seededFuzzServer(t)

const discovery = async (path: string) => {
  const r = await server.request('GET', `/api/scim/v2/${path}`, { token })
  if (r.status !== 200 || !Array.isArray(r.body?.Resources))
    throw new Error(`GET /api/scim/v2/${path} answered ${r.status}: ${r.text.slice(0, 300)}`)
  return r.body.Resources
}
const view = new ScimSchemaView(await discovery('ResourceTypes'), await discovery('Schemas'))
// A user with as many work e-mails as the service takes (9,999, else its cap of 100), for PATCHes whose value filters run over them all.
for (const n of [9_999, 100]) {
  const emails = Array.from({ length: n }, (_x, i) => ({ value: `big${i}@x.example`, type: 'work' }))
  const r = await server.request('POST', '/api/scim/v2/Users', {
    token,
    raw: JSON.stringify({ userName: `fuzz.big.${n}@example.com`, emails }),
    headers: { 'content-type': 'application/scim+json' }
  })
  if (r.status === 201) {
    pools.ids.set('scim-user-big', r.body.id)
    t.comment(`the big SCIM user has ${n} e-mails`)
    break
  }
}
const probe = new Probe({ server, snapshots, boundMs, tokens: { 'api-key': token } })
const runTag = Date.now().toString(36)
let counter = 0
const context = { view, pools, unique: () => `fz-${runTag}-${++counter}`, encode: percentEncode }

const ops: ScimOp[] = ['create', 'replace', 'patch', 'list', 'get']
const familyOf = (c: Pick<ScimCase, 'op' | 'type'>) => `${c.op}Scim${c.type}`
const listResponse = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
const expected: Record<ScimOp, number[]> = { create: [201], replace: [200], patch: [200, 204], list: [200], get: [200] }

/** The SCIM oracle: a success of the right status and shape, or a SCIM error with a fitting scimType. */
function judgeScim(reply: WireReply, c: ScimCase): Judgement {
  const issues = leaked(reply.text)
  const type = mediaType(reply)
  if (reply.status >= 200 && reply.status < 300) {
    if (!expected[c.op].includes(reply.status))
      issues.push(`a ${c.op} answered ${reply.status}, not ${expected[c.op].join(' or ')}`)
    if (reply.status !== 204) {
      if (type !== 'application/scim+json')
        issues.push(
          `a ${reply.status} with Content-Type ${JSON.stringify(reply.headers['content-type'] ?? '(none)')}, not application/scim+json`
        )
      const body = parseJson(reply.text)
      if (!body.ok || !body.value || typeof body.value !== 'object' || Array.isArray(body.value))
        issues.push(`a ${reply.status} whose body is not a JSON object`)
      else if (
        c.op === 'list' &&
        (!body.value.schemas?.includes?.(listResponse) ||
          !Array.isArray(body.value.Resources) ||
          typeof body.value.totalResults !== 'number')
      )
        issues.push('a list answer that is not a ListResponse with Resources and totalResults')
    }
    return { refused: false, issues }
  }
  if (reply.status >= 400 && reply.status < 500) {
    if (type !== 'application/scim+json')
      issues.push(
        `a ${reply.status} with Content-Type ${JSON.stringify(reply.headers['content-type'] ?? '(none)')}, not application/scim+json`
      )
    else {
      issues.push(...scimErrorIssues(reply))
      const body = parseJson(reply.text)
      const scimType = body.ok ? body.value?.scimType : undefined
      if (reply.status === 400) {
        const fitting = [...new Set(c.mutations.flatMap((m) => fittingScimTypes[m.how]))]
        if (scimType === undefined)
          issues.push(`a 400 without scimType${fitting.length ? ` (one of ${fitting.join(', ')} fits)` : ''}`)
        else if (fitting.length && !fitting.includes(scimType))
          issues.push(`scimType ${JSON.stringify(scimType)} does not fit what was wrong (one of ${fitting.join(', ')})`)
      }
    }
    return { refused: true, issues }
  }
  if (reply.status < 500) issues.push(`answered ${reply.status}`)
  return { refused: true, issues }
}

async function runCase(c: ScimCase) {
  const r = renderScim(c, context)
  const headers: Array<[string, string]> = [['Authorization', `Bearer ${token}`]]
  if (r.body) headers.push(['Content-Type', c.mediaType])
  const label = `${r.method} ${r.target.split('?')[0].replace(/\/api\/scim\/v2/, '')}`
  await probe.run(
    {
      family: familyOf(c),
      label,
      notes: r.notes,
      wire: { method: r.method, target: r.target, headers, body: r.body },
      patienceMs
    },
    (reply) => judgeScim(reply, c)
  )
}

const families = view.types.flatMap((rt) => ops.map((op) => ({ type: rt.name, op })))
const planned = families.filter((f) => selected(familyOf(f))).length * runs + 20
t.setTimeout(Number(process.env.FUZZ_TIMEOUT_MS ?? Math.max(180_000, planned * 500)))
const started = performance.now()
t.comment(
  `fuzzing SCIM ${view.types.map((r) => r.name).join(' and ')}: ${ops.join(', ')}, ${runs} cases each; seed ${fuzzEnv.seed}, bound ${boundMs} ms per answer`
)

for (const [i, f] of families.entries()) {
  if (!selected(familyOf(f))) continue
  await t.test(
    `SCIM ${f.op} of ${f.type} answers hostile requests with a success or a SCIM error, in time, changing nothing when it refuses`,
    async (t) => {
      if (
        await fuzzProperty(
          t,
          scimCases(f.type, f.op),
          { seed: fuzzEnv.seed + i, numRuns: runs, show: showScim },
          runCase
        )
      )
        t.pass(`${probe.sent.get(familyOf(f)) ?? 0} requests to ${familyOf(f)}`)
    }
  )
}

const filterPick = (start: string) => hostileFilters.findIndex((f) => f.label.startsWith(start))
/** Cases every run sends whatever the seed: the shapes that broke before (or are most likely to). */
const hard: Array<{ label: string; c: ScimCase; big?: boolean }> = [
  {
    label: 'filter=constructor pr',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick('"constructor pr'), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter=__proto__ eq "x"',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick('"__proto__ eq'), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter=userName eq "<NUL>"',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick(JSON.stringify('userName eq "\u0000"')), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter with a lone surrogate',
    c: {
      type: 'Group',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick('"displayName co'), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter nested 1,000 parentheses deep',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick("'('.repeat(1000)"), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter of 300 or-ed comparisons',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick('300 ×'), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'a user with a NUL in an attribute',
    c: { type: 'User', op: 'create', mutations: [{ how: 'value', pick: 2, at: 0 }], mediaType: 'application/scim+json' }
  },
  {
    label: 'PATCH of a group: 1,001 operations',
    c: {
      type: 'Group',
      op: 'patch',
      mutations: [{ how: 'many-ops', pick: 1, at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of a group: as many operations as fit in 1 MiB',
    c: {
      type: 'Group',
      op: 'patch',
      mutations: [{ how: 'many-ops', pick: 3, at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of a group: one add of members with as many values as fit in 1 MiB',
    c: { type: 'Group', op: 'patch', mutations: [{ how: 'huge', pick: 3, at: 0 }], mediaType: 'application/scim+json' }
  },
  {
    label: 'PATCH of a user: path __proto__',
    c: {
      type: 'User',
      op: 'patch',
      mutations: [{ how: 'patch-path', pick: 0, at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of a user: path constructor.prototype',
    c: {
      type: 'User',
      op: 'patch',
      mutations: [{ how: 'patch-path', pick: 2, at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'a user with as many e-mails as fit in 1 MiB',
    c: { type: 'User', op: 'create', mutations: [{ how: 'huge', pick: 3, at: 0 }], mediaType: 'application/scim+json' }
  },
  {
    label: 'filter=userName eq "\\u0000" (an escaped NUL)',
    c: {
      type: 'User',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick(JSON.stringify('userName eq "\\u0000"')), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'filter=displayName eq "\\ud800" (an escaped lone surrogate)',
    c: {
      type: 'Group',
      op: 'list',
      mutations: [{ how: 'hostile-filter', pick: filterPick(JSON.stringify('displayName eq "\\ud800"')), at: 0 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of the big user: 1,000 adds through emails[type eq "work" and value co "@x"]',
    big: true,
    c: {
      type: 'User',
      op: 'patch',
      big: true,
      mutations: [{ how: 'many-ops', pick: 0, at: 1 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of the big user: as many adds through a value filter as fit in 1 MiB',
    big: true,
    c: {
      type: 'User',
      op: 'patch',
      big: true,
      mutations: [{ how: 'many-ops', pick: 3, at: 1 }],
      mediaType: 'application/scim+json'
    }
  },
  {
    label: 'PATCH of a user: as many operations as fit in 1 MiB',
    c: {
      type: 'User',
      op: 'patch',
      mutations: [{ how: 'many-ops', pick: 3, at: 0 }],
      mediaType: 'application/scim+json'
    }
  }
]

if (selected('scimHardCases'))
  await t.test(
    'the hard cases (prototype names and NUL in filters, deep and long filters, huge PATCHes) answer in time with a success or a SCIM error',
    async (t) => {
      for (const h of hard) {
        if (!view.types.some((r) => r.name === h.c.type) || (h.big && !pools.ids.has('scim-user-big'))) continue
        try {
          await runCase(h.c)
          t.pass(h.label)
        } catch (err) {
          t.fail(`${h.label}: ${(err as Error).message.split('\n').slice(1, 2).join(' ').trim()}`, {
            repro: (err as Error).message,
            stack: ''
          })
        }
      }
    }
  )

await t.test('every answer the SCIM fuzzer got is one the OpenAPI document describes', async (t) => {
  await probe.settle()
  for (const [what, repro] of probe.contract) t.fail(what, { repro, stack: '' })
  if (!probe.contract.size) t.pass('no answer broke the document')
  server.violations.length = 0
})

t.comment(`scim requests sent per operation: ${[...probe.sent].map(([id, n]) => `${id} ${n}`).join(', ')}`)
t.comment(
  `scim fuzz requests sent in total: ${probe.total()} in ${((performance.now() - started) / 1000).toFixed(1)} s; slowest answer ${probe.slowest.label}`
)
