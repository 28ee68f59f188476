import { describeReply, expect, Failure, type KitUser } from './client.ts'
import type { KitContext, KitRecord } from './kit.ts'

const listPages = 20

/** Row rules (`rowAccess`) and field rules (`access.read`/`write`), each seen by users holding one role. */
export async function accessChecks(ctx: KitContext): Promise<void> {
  const { m, http, admin } = ctx
  const roles = Object.keys(m.permissions)
  const rights = (role: string) => m.permissions[role] ?? []
  // A role without a row rule sees every record: the field checks ask those first.
  const unrestrictedFirst = (list: string[]) => [
    ...list.filter((r) => !m.rowAccess?.[r]),
    ...list.filter((r) => m.rowAccess?.[r])
  ]

  /** Ids of the module's records `token` lists, page by page (at most `listPages` pages). */
  async function listed(token: string): Promise<Map<string, KitRecord>> {
    const seen = new Map<string, KitRecord>()
    let cursor: string | null = null
    for (let page = 0; page < listPages; page++) {
      const res = await http.request(
        'GET',
        `/api/v1/records?moduleKey=${encodeURIComponent(m.key)}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token }
      )
      expect(res.status === 200, `the list answered ${describeReply(res)}`)
      for (const r of res.body.items as KitRecord[]) seen.set(r.id, r)
      cursor = res.body.nextCursor
      if (!cursor) break
    }
    return seen
  }

  /**
   * A record with every field that `user` (of `role`) may see under the role's row rule: made by the tenant key with
   * user fields naming the user, or, when the rule is the creator's alone, made by the user and completed by the key.
   */
  async function recordSeenBy(user: KitUser, role: string): Promise<KitRecord> {
    const conditions = m.rowAccess?.[role]
    const full = ctx.sample(true, user.id)
    if (!conditions || conditions.some((c) => 'field' in c)) return ctx.create(full)
    expect(rights(role).includes('create'), `role "${role}" sees only what it creates, and may not create`)
    const own = await ctx.create(ctx.sample(false, user.id), user.token)
    const res = await http.request('PATCH', `/api/v1/records/${own.id}`, { token: admin, body: { payload: full } })
    expect(res.status === 200, `completing the record answered ${describeReply(res)}`)
    return res.body as KitRecord
  }

  for (const [role, conditions] of Object.entries(m.rowAccess ?? {})) {
    await ctx.check(`row rule of role "${role}": a user sees their records and not another user's`, async () => {
      if (!rights(role).includes('read')) return `role "${role}" has no read right: nothing to see`
      const [viewer, other] = [await ctx.newUser([role]), await ctx.newUser([role])]
      const theirs = await recordSeenBy(other, role)
      const mine = await recordSeenBy(viewer, role)
      const list = await listed(viewer.token)
      expect(!list.has(theirs.id), "another user's record is in the list")
      expect(list.has(mine.id), 'their own record is not in the list')
      const got = await http.request('GET', `/api/v1/records/${theirs.id}`, { token: viewer.token })
      expect(got.status === 404, `GET of another user's record answered ${describeReply(got)}, not 404`)
      const own = await http.request('GET', `/api/v1/records/${mine.id}`, { token: viewer.token })
      expect(own.status === 200, `GET of their own record answered ${describeReply(own)}`)
      return conditions.map((c) => ('field' in c ? `${c.field} = self` : 'createdBy = self')).join(' or ')
    })
  }

  for (const f of m.fields) {
    if (!f.access) continue
    const readers = f.access.read
    const writers = f.access.write ?? readers
    const readRoles = roles.filter((r) => rights(r).includes('read'))
    const nonReader = unrestrictedFirst(readRoles.filter((r) => !readers.includes(r)))[0]
    const reader = unrestrictedFirst(readRoles.filter((r) => readers.includes(r)))[0]
    await ctx.check(`field "${f.key}": hidden from a role that may not read it`, async () => {
      if (!nonReader) return 'every role with the read right reads it'
      const user = await ctx.newUser([nonReader])
      const record = await recordSeenBy(user, nonReader)
      expect(f.key in record.payload, `the tenant key's record lacks ${f.key}`)
      const got = await http.request('GET', `/api/v1/records/${record.id}`, { token: user.token })
      expect(got.status === 200, `role "${nonReader}" reading the record got ${describeReply(got)}`)
      expect(!(f.key in got.body.payload), `role "${nonReader}" reads ${f.key}`)
      const item = (await listed(user.token)).get(record.id)
      expect(item && !(f.key in item.payload), `role "${nonReader}" lists ${item ? f.key : 'nothing of the record'}`)
      if (reader) {
        const allowed = await ctx.newUser([reader])
        const seen = await http.request('GET', `/api/v1/records/${(await recordSeenBy(allowed, reader)).id}`, {
          token: allowed.token
        })
        expect(seen.status === 200 && f.key in seen.body.payload, `role "${reader}" does not read ${f.key}`)
      }
      return `hidden from "${nonReader}"${reader ? `, shown to "${reader}"` : ''}`
    })
    const nonWriter = unrestrictedFirst(roles.filter((r) => rights(r).includes('update') && !writers.includes(r)))[0]
    await ctx.check(`field "${f.key}": refuses a change by a role that may not write it`, async () => {
      if (!nonWriter) return 'every role with the update right writes it'
      const user = await ctx.newUser([nonWriter])
      const record = await recordSeenBy(user, nonWriter)
      const value = ctx.sample(true, user.id, [f])[f.key]
      if (value === undefined) throw new Failure(`the kit has no value to give ${f.key}`)
      const res = await http.request('PATCH', `/api/v1/records/${record.id}`, {
        token: user.token,
        body: { payload: { [f.key]: value } }
      })
      expect(res.status === 403, `role "${nonWriter}" changing ${f.key} got ${describeReply(res)}, not 403`)
      return `role "${nonWriter}": ${res.body?.code}`
    })
  }
}
