import type { FieldDefinition, ModuleDefinition } from '../types.ts'
import { describeReply, expect, problemFields, type KitReply } from './client.ts'
import type { KitContext, KitRecord } from './kit.ts'

const unknownField = 'conformanceKitUnknownField'

/** Whether two JSON values are the same (object key order aside). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return (
    ka.length === kb.length &&
    ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  )
}

/** A value for `f` other than `current`, or undefined when the kit has none to offer (a choice with one option, a pattern). */
export function otherValue(f: FieldDefinition, current: unknown): unknown {
  switch (f.type) {
    case 'text':
    case 'longText': {
      if (f.type === 'text' && f.pattern) return undefined
      const v = 'Changed by the conformance kit'.slice(0, f.maxLength ?? 500)
      return v === current ? undefined : v
    }
    case 'boolean':
      return !current
    case 'date':
      return current === '2026-04-01' ? '2026-04-02' : '2026-04-01'
    case 'datetime':
      return current === '2026-04-01T09:00:00Z' ? '2026-04-01T10:00:00Z' : '2026-04-01T09:00:00Z'
    case 'singleChoice': {
      const values = f.options.map((o) => (typeof o === 'string' ? o : o.value))
      return values.find((v) => v !== current)
    }
    default:
      return undefined
  }
}

/** A stored payload without what the platform adds to what was sent: computed fields, defaults of fields not sent. */
function asSent(m: ModuleDefinition, stored: Record<string, unknown>, sent: Record<string, unknown>) {
  const added = new Set(
    m.fields.filter((f) => 'computed' in f || ('default' in f && !Object.hasOwn(sent, f.key))).map((f) => f.key)
  )
  return Object.fromEntries(Object.entries(stored).filter(([k]) => !added.has(k)))
}

/** The problem answer a refused payload must be: 400, application/problem+json, naming `field`. */
function expectRefusal(res: KitReply, field: string) {
  expect(res.status === 400, `answered ${describeReply(res)}, not 400`)
  expect(
    /^application\/problem\+json/.test(res.headers.get('content-type') ?? ''),
    `the 400 came as ${res.headers.get('content-type')}, not application/problem+json`
  )
  expect(
    problemFields(res).includes(field),
    `the 400 names ${problemFields(res).join(', ') || 'no field'}, not ${field}`
  )
}

/** Create (required fields, every field), read, patch with If-Match, refusals of bad payloads, soft delete. */
export async function recordChecks(ctx: KitContext): Promise<void> {
  const { m, http, admin } = ctx
  let full: KitRecord | undefined

  await ctx.check('creates a record with only the required fields', async () => {
    const payload = ctx.sample(false)
    const r = await ctx.create(payload)
    expect(r.state === m.workflow.initial, `it starts in "${r.state}", not the initial state "${m.workflow.initial}"`)
    expect(sameJson(asSent(m, r.payload, payload), payload), `it holds ${JSON.stringify(r.payload)}, not what was sent`)
    return `fields ${Object.keys(payload).join(', ') || 'none'}`
  })

  await ctx.check('creates a record with every field', async () => {
    const payload = ctx.sample(true)
    full = await ctx.create(payload)
    expect(
      sameJson(asSent(m, full.payload, payload), payload),
      `it holds ${JSON.stringify(full.payload)}, not what was sent`
    )
    return `${Object.keys(payload).length} fields`
  })

  await ctx.check('reads a record back as it was written, with its ETag', async () => {
    expect(full, 'no record to read (create failed)')
    const got = await http.request('GET', `/api/v1/records/${full.id}`, { token: admin })
    expect(got.status === 200, `GET answered ${describeReply(got)}`)
    expect(sameJson(got.body.payload, full.payload), 'the payload read differs from the one written')
    expect(got.headers.get('etag'), 'no ETag header')
  })

  await ctx.check('patches a record with If-Match, logs the change and refuses a stale If-Match with 412', async () => {
    expect(full, 'no record to patch (create failed)')
    const field = m.fields.find((f) => !f.access && otherValue(f, full!.payload[f.key]) !== undefined)
    expect(field, 'no field the kit can change (text, long text, boolean, date, date-time or choice)')
    const value = otherValue(field, full.payload[field.key])
    const etag = `"${full.version}"`
    const patched = await http.request('PATCH', `/api/v1/records/${full.id}`, {
      token: admin,
      headers: { 'if-match': etag },
      body: { payload: { [field.key]: value } }
    })
    expect(patched.status === 200, `PATCH answered ${describeReply(patched)}`)
    expect(sameJson(patched.body.payload[field.key], value), `${field.key} was not changed`)
    expect(patched.body.version === full.version + 1, `version ${patched.body.version} after one change`)
    const change = patched.body.activity?.at(-1)?.changes?.find((c: { field: string }) => c.field === field.key)
    expect(change && sameJson(change.to, value), `the activity does not record the change of ${field.key}`)
    const stale = await http.request('PATCH', `/api/v1/records/${full.id}`, {
      token: admin,
      headers: { 'if-match': etag },
      body: { payload: { [field.key]: full.payload[field.key] ?? null } }
    })
    expect(stale.status === 412, `a stale If-Match answered ${describeReply(stale)}, not 412`)
    full = patched.body as KitRecord
    return `changed ${field.key}`
  })

  await ctx.check('refuses a payload without a required field: 400 problem naming it', async () => {
    const required = m.fields.find((f) => f.required)
    if (!required) return 'the module has no required field: nothing to refuse'
    const payload = ctx.sample(true)
    delete payload[required.key]
    expectRefusal(
      await http.request('POST', '/api/v1/records', { token: admin, body: { moduleKey: m.key, payload } }),
      `payload.${required.key}`
    )
    return `without ${required.key}`
  })

  await ctx.check('refuses a payload with an unknown field: 400 problem naming it', async () => {
    const payload = { ...ctx.sample(false), [unknownField]: 'x' }
    expectRefusal(
      await http.request('POST', '/api/v1/records', { token: admin, body: { moduleKey: m.key, payload } }),
      `payload.${unknownField}`
    )
  })

  await ctx.check('soft-deletes a record, which then reads as 404 and stays in the audit log', async () => {
    const r = await ctx.create(ctx.sample(false))
    const removed = await http.request('DELETE', `/api/v1/records/${r.id}`, { token: admin })
    expect(removed.status === 200, `DELETE answered ${describeReply(removed)}`)
    const gone = await http.request('GET', `/api/v1/records/${r.id}`, { token: admin })
    expect(gone.status === 404, `GET after delete answered ${describeReply(gone)}`)
    const audit = await http.request('GET', `/api/v1/audit-log?recordId=${r.id}`, { token: admin })
    expect(audit.status === 200, `the audit log answered ${describeReply(audit)}`)
    expect(audit.body.items?.at(-1)?.action === 'deleted', 'the audit log does not end with the deletion')
  })
}
