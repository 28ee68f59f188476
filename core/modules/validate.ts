import { fieldTypes, type FieldDefinition, type ModuleDefinition } from './types.ts'
import { compilePattern } from './record-number.ts'
import { slugPattern as slugSource, unknownKey } from './definition-schema.ts'
import { checkDutiesAndLocks } from './validate-duties.ts'

/** Raised when a module package is malformed; start-up stops with its message. */
export class ModuleDefinitionError extends Error {
  constructor(
    readonly packageName: string,
    readonly where: string,
    readonly problem: string
  ) {
    super(`Module package "${packageName}": ${where}: ${problem}`)
    this.name = 'ModuleDefinitionError'
  }
}

/** More summary columns than fit a landscape A4 table next to Number and State. */
export const maxSummaryColumns = 8
const keyPattern = /^[a-z][a-zA-Z0-9]*$/
const slugPattern = new RegExp(slugSource)
const semver = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/
const actionPattern = /^(read|create|update|delete|export|attachments|transition:(\*|[a-z][a-z0-9-]*))$/

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function checkFields(fields: unknown, path: string, fail: (where: string, problem: string) => never, nested: boolean) {
  if (!Array.isArray(fields) || fields.length === 0) fail(path, 'must be a non-empty array of fields')
  const seen = new Set<string>()
  for (const [i, f] of (fields as unknown[]).entries()) {
    if (!isObject(f)) fail(`${path}[${i}]`, 'must be an object')
    // Read as a definition from here: each check below tests the member it reads first.
    const field = f as unknown as FieldDefinition
    const where = `field "${nested ? `${path}.` : ''}${typeof field.key === 'string' ? field.key : `#${i}`}"`
    if (typeof field.key !== 'string' || !keyPattern.test(field.key))
      fail(where, 'key must be camelCase letters and digits')
    if (seen.has(field.key)) fail(where, 'is declared twice')
    seen.add(field.key)
    if (!fieldTypes.includes(field.type))
      fail(where, `unknown type "${String((field as { type: unknown }).type)}"; allowed: ${fieldTypes.join(', ')}`)
    if (field.required !== undefined && typeof field.required !== 'boolean') fail(where, 'required must be a boolean')
    switch (field.type) {
      case 'singleChoice':
      case 'multipleChoice': {
        if (!Array.isArray(field.options) || field.options.length === 0)
          fail(where, 'options must list at least one choice')
        const values = field.options.map((o) => (typeof o === 'string' ? o : o?.value))
        if (values.some((v) => typeof v !== 'string' || v === ''))
          fail(where, 'every option needs a non-empty string value')
        if (new Set(values).size !== values.length) fail(where, 'options repeat a value')
        break
      }
      case 'recordRef':
        if (typeof field.module !== 'string' || !slugPattern.test(field.module))
          fail(where, 'module must name the referenced module key')
        break
      case 'group':
        if (nested) fail(where, 'groups cannot be nested')
        checkFields(field.fields, field.key, fail, true)
        break
      case 'text':
        if (field.pattern !== undefined) {
          try {
            new RegExp(field.pattern, 'u')
          } catch {
            fail(where, 'pattern is not a valid regular expression')
          }
        }
        break
    }
    if (field.access !== undefined) {
      const a = field.access as unknown
      const roleList = (v: unknown) =>
        Array.isArray(v) && v.length > 0 && v.every((r) => typeof r === 'string' && r !== '')
      if (!isObject(a) || !roleList(a.read) || (a.write !== undefined && !roleList(a.write))) {
        fail(where, 'access must be { read: [roles...], write?: [roles...] } with at least one role in each list')
      }
      if (nested) fail(where, 'access rules apply to top-level fields only')
    }
    const find = field as { filterable?: unknown; sortable?: unknown; searchable?: unknown }
    for (const flag of ['filterable', 'sortable', 'searchable'] as const)
      if (find[flag] !== undefined && typeof find[flag] !== 'boolean') fail(where, `${flag} must be a boolean`)
    // Indexes and the search text are over top-level fields; a group's member may only refuse its filters.
    if (nested && (find.sortable === true || find.searchable === true || find.filterable === true))
      fail(
        where,
        'sortable, searchable and filterable: true apply to top-level fields only (a member may be filterable: false)'
      )
    if (find.searchable === true && field.access !== undefined)
      fail(
        where,
        'a field with an access rule cannot be searchable: every reader of the module searches the same text, so a search would tell those who may not read the field what it holds'
      )
    for (const bound of ['minimum', 'maximum', 'maxLength', 'minItems', 'maxItems'] as const) {
      const v: unknown = (field as Partial<Record<typeof bound, unknown>>)[bound]
      if (v !== undefined && typeof v !== 'number') fail(where, `${bound} must be a number`)
    }
  }
}

/** Summary columns are top-level payload fields, each once; a group or a typo would leave a blank default column. */
function checkSummaryColumns(
  columns: unknown,
  fields: FieldDefinition[],
  fail: (where: string, problem: string) => never
) {
  if (!Array.isArray(columns) || columns.length === 0 || columns.length > maxSummaryColumns)
    fail('summaryColumns', `must list 1 to ${maxSummaryColumns} top-level field keys`)
  const seen = new Set<string>()
  for (const key of columns) {
    const field = typeof key === 'string' ? fields.find((f) => f.key === key) : undefined
    if (!field)
      fail(
        'summaryColumns',
        `names unknown field ${JSON.stringify(key)}; top-level fields: ${fields.map((f) => f.key).join(', ')}`
      )
    if (field.type === 'group')
      fail('summaryColumns', `"${key}" is a repeating group, which does not fit a summary column`)
    if (seen.has(key)) fail('summaryColumns', `names "${key}" twice`)
    seen.add(key)
  }
}

/** A top-level field of one of `types`, or a failure naming `where` and what was expected. */
function topField(m: ModuleDefinition, key: unknown, types: string[], where: string, fail: Fail): void {
  const f = m.fields.find((x) => x.key === key)
  if (!f || !types.includes(f.type))
    fail(where, `${JSON.stringify(key)} must name a top-level field of type ${types.join(' or ')}`)
}
type Fail = (where: string, problem: string) => never

/** Due dates, date-triggered transitions and recurrence (issue 30): the fields and states they name. */
function checkDateRules(m: ModuleDefinition, states: ReadonlySet<string>, fail: Fail) {
  for (const t of m.workflow.transitions)
    if (t.auto) topField(m, t.auto.after, ['date', 'datetime'], `workflow transition "${t.key}" auto.after`, fail)
  if (m.due) {
    topField(m, m.due.field, ['date', 'datetime'], 'due.field', fail)
    for (const s of m.due.until ?? []) if (!states.has(s)) fail('due.until', `names unknown state "${s}"`)
  }
  const r = m.recurrence
  if (r) {
    const every = r.every as unknown
    const days = isObject(every) ? every.days : undefined
    if (
      !['day', 'week', 'month', 'year'].includes(every as string) &&
      !(typeof days === 'number' && Number.isInteger(days) && days >= 1 && days <= 3660)
    )
      fail('recurrence.every', `${JSON.stringify(every)} must be day, week, month, year or { days: n } (1 to 3660)`)
    if (r.per !== undefined) topField(m, r.per, ['singleChoice', 'recordRef'], 'recurrence.per', fail)
    for (const key of Object.keys(r.payload ?? {})) {
      if (!m.fields.some((f) => f.key === key)) fail(`recurrence.payload.${key}`, 'is not a field of the module')
      if (key === r.per) fail(`recurrence.payload.${key}`, 'is the per field: each series writes its own value there')
    }
  }
}

/** Checks a module definition loaded from a package; throws ModuleDefinitionError naming the package and the field. */
export function validateModuleDefinition(def: unknown, packageName: string): asserts def is ModuleDefinition {
  const fail = (where: string, problem: string): never => {
    throw new ModuleDefinitionError(packageName, where, problem)
  }
  if (!isObject(def)) fail('definition', 'the package must export defineModule({...}) as its default export')
  // A misspelt or unsupported key would otherwise be ignored: `requird: true` leaves the field optional.
  const unknown = unknownKey(def)
  if (unknown) {
    const meant = unknown.meant ? ` (did you mean "${unknown.meant}"?)` : ''
    fail(unknown.at, `unknown key "${unknown.key}"${meant}; known keys here: ${unknown.known.join(', ')}`)
  }
  const m = def as ModuleDefinition
  if (typeof m.key !== 'string' || !slugPattern.test(m.key)) fail('key', 'must be a lower-case slug such as "incident"')
  if (typeof m.version !== 'string' || !semver.test(m.version))
    fail('version', 'must be a semantic version such as "1.0.0"')
  if (typeof m.title !== 'string' || m.title.trim() === '') fail('title', 'must be a non-empty string')
  checkFields(m.fields, 'fields', fail, false)
  const fieldKeys = new Set(m.fields.map((f) => f.key))

  const wf = m.workflow
  if (!isObject(wf)) fail('workflow', 'must be an object with initial, states and transitions')
  if (!Array.isArray(wf.states) || wf.states.length === 0) fail('workflow.states', 'must list at least one state')
  const states = new Set<string>()
  for (const s of wf.states) {
    if (!isObject(s) || typeof s.key !== 'string' || !slugPattern.test(s.key))
      fail('workflow.states', `state ${JSON.stringify(s?.key)} needs a slug key`)
    if (states.has(s.key)) fail(`workflow state "${s.key}"`, 'is declared twice')
    states.add(s.key)
    for (const r of s.requires ?? [])
      if (!fieldKeys.has(r)) fail(`workflow state "${s.key}"`, `requires unknown field "${r}"`)
  }
  if (!states.has(wf.initial)) fail('workflow.initial', `"${wf.initial}" is not one of the states`)
  if (!Array.isArray(wf.transitions)) fail('workflow.transitions', 'must be an array')
  const transitions = new Set<string>()
  for (const t of wf.transitions) {
    const where = `workflow transition "${t?.key}"`
    if (!isObject(t) || typeof t.key !== 'string' || !slugPattern.test(t.key))
      fail('workflow.transitions', `transition ${JSON.stringify(t?.key)} needs a slug key`)
    if (transitions.has(t.key)) fail(where, 'is declared twice')
    transitions.add(t.key)
    if (!Array.isArray(t.from) || t.from.length === 0) fail(where, 'from must list at least one state')
    for (const s of t.from) if (!states.has(s)) fail(where, `from names unknown state "${s}"`)
    if (!states.has(t.to)) fail(where, `to names unknown state "${t.to}"`)
    for (const r of t.requires ?? []) if (!fieldKeys.has(r)) fail(where, `requires unknown field "${r}"`)
    if (t.roles !== undefined && (!Array.isArray(t.roles) || t.roles.some((r) => typeof r !== 'string')))
      fail(where, 'roles must be an array of role names')
  }

  checkDutiesAndLocks(m, fail)

  if (!isObject(m.permissions)) fail('permissions', 'must map role names to lists of actions')
  for (const [role, actions] of Object.entries(m.permissions)) {
    if (!Array.isArray(actions)) fail(`permissions.${role}`, 'must be an array of actions')
    for (const a of actions) {
      if (typeof a !== 'string' || !actionPattern.test(a))
        fail(`permissions.${role}`, `unknown action ${JSON.stringify(a)}`)
      if (a.startsWith('transition:') && a !== 'transition:*' && !transitions.has(a.slice(11)))
        fail(`permissions.${role}`, `names unknown transition "${a.slice(11)}"`)
    }
  }
  const roles = new Set(Object.keys(m.permissions))
  for (const f of m.fields) {
    for (const r of [...(f.access?.read ?? []), ...(f.access?.write ?? [])]) {
      if (!roles.has(r))
        fail(`field "${f.key}"`, `access names role "${r}", which the module's permissions do not declare`)
    }
  }
  if (m.rowAccess !== undefined) {
    if (!isObject(m.rowAccess)) fail('rowAccess', 'must map role names to lists of conditions')
    for (const [role, conditions] of Object.entries(m.rowAccess)) {
      const where = `rowAccess.${role}`
      if (!roles.has(role)) fail(where, "names a role the module's permissions do not declare")
      if (!Array.isArray(conditions) || conditions.length === 0) fail(where, 'must list at least one condition')
      for (const c of conditions as unknown[]) {
        if (isObject(c) && c.createdBy === 'self' && Object.keys(c).length === 1) continue
        if (isObject(c) && c.equals === 'self' && typeof c.field === 'string' && Object.keys(c).length === 2) {
          const field = m.fields.find((f) => f.key === c.field)
          if (!field || field.type !== 'user')
            fail(where, `condition field "${c.field}" must be a top-level field of type user`)
          continue
        }
        fail(
          where,
          `unknown condition ${JSON.stringify(c)}; use { "createdBy": "self" } or { "field": "<user field>", "equals": "self" }`
        )
      }
    }
  }
  if (m.summaryColumns !== undefined) checkSummaryColumns(m.summaryColumns, m.fields, fail)
  checkDateRules(m, states, fail)
  if (typeof m.numberPattern !== 'string') fail('numberPattern', 'must be a string such as "INC-{YYYY}-{seq:5}"')
  try {
    compilePattern(m.numberPattern)
  } catch (err) {
    fail('numberPattern', (err as Error).message)
  }
}
