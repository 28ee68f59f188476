import type { ModuleDefinition, WorkflowTransition } from '../types.ts'
import { separates, separationOf } from '../duties.ts'
import { describeReply, expect, Failure, problemFields, type KitReply, type KitUser } from './client.ts'
import type { KitContext, KitRecord } from './kit.ts'

/** Whether a value counts as present for a guard (the records service's rule: not empty, not blank). */
export const hasValue = (v: unknown) =>
  v !== undefined && v !== null && !(typeof v === 'string' && v.trim() === '') && !(Array.isArray(v) && !v.length)

/** Whether a user holding only `role` may fire `t`: the role grants the transition and is one the transition names. */
export function roleMayFire(m: ModuleDefinition, role: string, t: WorkflowTransition): boolean {
  const actions = m.permissions[role] ?? []
  const granted = actions.includes(`transition:${t.key}`) || actions.includes('transition:*')
  return granted && (!t.roles?.length || t.roles.includes(role))
}

/** The fields a record must hold to go through `t`: its target state's, then its own. */
export const guardFields = (m: ModuleDefinition, t: WorkflowTransition) => [
  ...(m.workflow.states.find((s) => s.key === t.to)?.requires ?? []),
  ...(t.requires ?? [])
]

/** `payload` with the user fields `t` must be separate from naming `userId` (someone other than its firer). */
function separated(t: WorkflowTransition, payload: Record<string, unknown>, userId: string) {
  const out = { ...payload }
  for (const f of t.separateFrom?.fields ?? []) if (f in out) out[f] = userId
  return out
}

/** Breadth-first from the initial state: the shortest transition path to each reachable state. */
export function pathsFromInitial(m: ModuleDefinition): Map<string, WorkflowTransition[]> {
  const paths = new Map<string, WorkflowTransition[]>([[m.workflow.initial, []]])
  const queue = [m.workflow.initial]
  while (queue.length) {
    const state = queue.shift()!
    for (const t of m.workflow.transitions) {
      if (!t.from.includes(state) || paths.has(t.to)) continue
      paths.set(t.to, [...paths.get(state)!, t])
      queue.push(t.to)
    }
  }
  return paths
}

/** Where `t` is separate from a user field the record (or the transition's payload) fills: the person it names is refused 403 naming it. */
async function separationCheck(
  ctx: KitContext,
  t: WorkflowTransition,
  record: KitRecord,
  payload: Record<string, unknown>,
  fire: (id: string, key: string, token: string, payload?: Record<string, unknown>) => Promise<KitReply>,
  helper: () => Promise<KitUser>
) {
  const namedIn = t.separateFrom?.fields?.find((f) => record.payload[f] !== undefined || f in payload)
  if (!namedIn) return
  await ctx.check(
    `transition "${t.key}": refuses the person named in "${namedIn}" (separation of duties)`,
    async () => {
      const res = await fire(record.id, t.key, (await helper()).token, payload)
      expect(res.status === 403, `the person named in "${namedIn}" got ${describeReply(res)}, not 403`)
      const conflicts = (res.body?.conflicts ?? []) as Array<{ rule: string; field?: string }>
      expect(
        conflicts.some((c) => c.rule === 'field' && c.field === namedIn),
        `the 403 (${res.body?.code}) does not name the field "${namedIn}"`
      )
    }
  )
}

/**
 * Every transition, each on a record of its own brought to a state it starts from along the shortest path: a role
 * that may not fire it is refused 403; without the fields its guard needs it is a 400 naming them; the record's
 * creator is refused where four eyes are required; then a user holding the roles that may fire it fires it.
 */
export async function workflowChecks(ctx: KitContext): Promise<void> {
  const { m, http, admin } = ctx
  const paths = pathsFromInitial(m)
  const roles = Object.keys(m.permissions)
  const transitions = m.workflow.transitions.slice(0, ctx.options.maxTransitions)
  let allRoles: KitUser | undefined
  const helper = async () => (allRoles ??= await ctx.newUser(roles))

  const fire = (id: string, key: string, token: string, payload?: Record<string, unknown>) =>
    http.request('POST', `/api/v1/records/${id}:transition`, {
      token,
      body: { transition: key, ...(payload ? { payload } : {}) }
    })
  /** The guard fields `t` still needs on `record`, filled with values the kit makes (user fields name `userId`). */
  const fillFor = (t: WorkflowTransition, record: KitRecord, userId: string) => {
    const missing = guardFields(m, t).filter((f) => !hasValue(record.payload[f]))
    const fields = m.fields.filter((f) => missing.includes(f.key))
    const payload = ctx.sample(true, userId, fields)
    const unfilled = missing.filter((f) => !(f in payload))
    if (unfilled.length)
      throw new Failure(`the kit has no value to give ${unfilled.join(', ')} (a pattern, or no such field)`)
    return { missing, payload }
  }

  if (m.workflow.transitions.length > transitions.length)
    ctx.results.push({
      name: `checks the first ${transitions.length} of the module's ${m.workflow.transitions.length} transitions (the cap)`,
      ok: true,
      detail: `not checked: ${m.workflow.transitions
        .slice(transitions.length)
        .map((t) => t.key)
        .join(', ')}`
    })

  for (const t of transitions) {
    const from = t.from.find((s) => paths.has(s))
    const firers = roles.filter((r) => roleMayFire(m, r, t))
    let record: KitRecord | undefined
    let firer: KitUser | undefined
    let missing: string[] = []
    let payload: Record<string, unknown> = {}
    const ready = await ctx.check(`brings a record to where transition "${t.key}" starts`, async () => {
      expect(from, `none of the states it starts from (${t.from.join(', ')}) is reachable from "${m.workflow.initial}"`)
      expect(firers.length, 'no role of the module may fire it (permissions and its roles have none in common)')
      firer = await ctx.newUser(firers)
      // User fields name the firer, so a row rule on them lets the firer see the record; those `t` must be separate
      // from name the helper instead.
      record = await ctx.create(separated(t, ctx.sample(false, firer.id), (await helper()).id))
      for (const step of paths.get(from)!) {
        const payload = separated(t, fillFor(step, record, firer.id).payload, (await helper()).id)
        // The tenant key created the record: a step with separation of duties goes to a user holding every role.
        const res = await fire(record.id, step.key, separates(step) ? (await helper()).token : admin, payload)
        expect(res.status === 200, `step "${step.key}" answered ${describeReply(res)}`)
        record = res.body as KitRecord
      }
      ;({ missing, payload } = fillFor(t, record, firer.id))
      payload = separated(t, payload, (await helper()).id)
      return `state "${from}" by ${
        paths
          .get(from)!
          .map((s) => s.key)
          .join(' → ') || 'creation'
      }`
    })
    if (!ready || !record || !firer) continue

    // A role whose row rule would hide the record answers 404 before the transition is judged: one without a rule
    // first, and of those one that fires other transitions (the nearer miss).
    const rank = (r: string) =>
      (m.rowAccess?.[r] ? 2 : 0) + ((m.permissions[r] ?? []).some((a) => a.startsWith('transition:')) ? 0 : 1)
    const refused = roles.filter((r) => !roleMayFire(m, r, t)).sort((a, b) => rank(a) - rank(b))[0]
    await ctx.check(`transition "${t.key}": refuses a user whose role may not fire it`, async () => {
      if (!refused) return 'every role of the module may fire it'
      const user = await ctx.newUser([refused])
      const res = await fire(record!.id, t.key, user.token, payload)
      const hidden = res.status === 404 && m.rowAccess?.[refused]
      expect(res.status === 403 || hidden, `role "${refused}" got ${describeReply(res)}, not 403`)
      return hidden ? `role "${refused}" (its row rule hides the record: 404)` : `role "${refused}": ${res.body?.code}`
    })

    await ctx.check(`transition "${t.key}": refuses without the fields its guard needs, naming them`, async () => {
      if (!missing.length) return 'the record already holds what the guard needs'
      const res = await fire(record!.id, t.key, firer!.token)
      expect(res.status === 400, `without ${missing.join(', ')} it answered ${describeReply(res)}, not 400`)
      const named = problemFields(res)
      const unnamed = missing.filter((f) => !named.includes(`payload.${f}`))
      expect(!unnamed.length, `the 400 does not name ${unnamed.join(', ')}`)
      return `names ${missing.join(', ')}`
    })

    if (separationOf(t).creator)
      await ctx.check(`transition "${t.key}": refuses the record's creator (four eyes)`, async () => {
        const res = await fire(record!.id, t.key, admin, payload)
        expect(res.status === 403, `the creator got ${describeReply(res)}, not 403`)
        expect(res.body?.code === 'workflow.self_approval', `the 403 is ${res.body?.code}, not workflow.self_approval`)
      })

    await separationCheck(ctx, t, record, payload, fire, helper)

    await ctx.check(
      `transition "${t.key}": fires from "${from}" to "${t.to}" for a user of ${firers.join(', ')}`,
      async () => {
        const res = await fire(record!.id, t.key, firer!.token, payload)
        expect(res.status === 200, `answered ${describeReply(res)}`)
        expect(res.body.state === t.to, `the record is in "${res.body.state}", not "${t.to}"`)
        return missing.length ? `with ${missing.join(', ')}` : ''
      }
    )
  }
}
