import { allFields } from './duties.ts'
import type { ModuleDefinition } from './types.ts'

const isNameList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')

/**
 * The load-time rules of separation of duties (a transition's `separateFrom`) and locks by state (a state's
 * `locks`): what they name exists and is of the kind the rule reads. Called by validateModuleDefinition once the
 * fields, states and transitions themselves have passed.
 */
export function checkDutiesAndLocks(m: ModuleDefinition, fail: (where: string, problem: string) => never): void {
  const fields = new Map(m.fields.map((f) => [f.key, f]))
  const transitions = new Set(m.workflow.transitions.map((t) => t.key))
  for (const s of m.workflow.states) {
    if (s.locks === undefined) continue
    const where = `workflow state "${s.key}"`
    if (!isNameList(s.locks) || !s.locks.length)
      fail(where, `locks must list top-level field keys, or be ["${allFields}"] for the whole payload`)
    if (s.locks.includes(allFields) && s.locks.length > 1)
      fail(where, `locks "${allFields}" locks the whole payload; list it alone`)
    const seen = new Set<string>()
    for (const key of s.locks) {
      if (key === allFields) continue
      if (!fields.has(key))
        fail(where, `locks unknown field "${key}"; top-level fields: ${[...fields.keys()].join(', ')}`)
      if (seen.has(key)) fail(where, `locks "${key}" twice`)
      seen.add(key)
    }
  }
  for (const t of m.workflow.transitions) {
    const sep = t.separateFrom
    if (sep === undefined) continue
    const where = `workflow transition "${t.key}"`
    if (sep.creator !== undefined && typeof sep.creator !== 'boolean')
      fail(where, 'separateFrom.creator must be a boolean')
    if (sep.fields !== undefined) {
      if (!isNameList(sep.fields) || !sep.fields.length)
        fail(where, 'separateFrom.fields must list top-level user fields')
      for (const key of sep.fields) {
        const f = fields.get(key)
        if (!f || f.type !== 'user')
          fail(
            where,
            `separateFrom.fields names "${key}", which is not a top-level user field; user fields: ${
              m.fields
                .filter((x) => x.type === 'user')
                .map((x) => x.key)
                .join(', ') || 'none'
            }`
          )
      }
    }
    if (sep.transitions !== undefined) {
      if (!isNameList(sep.transitions) || !sep.transitions.length)
        fail(where, 'separateFrom.transitions must list transition keys of this module')
      for (const key of sep.transitions)
        if (!transitions.has(key))
          fail(
            where,
            `separateFrom.transitions names unknown transition "${key}"; transitions: ${[...transitions].join(', ')}`
          )
    }
    if (!sep.creator && !sep.fields?.length && !sep.transitions?.length)
      fail(where, 'separateFrom names nobody: give creator: true, fields or transitions')
  }
}
