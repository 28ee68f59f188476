import { clock, utcDay } from '../clock.ts'
import type { FieldProblem } from '../errors/index.ts'
import { dataObject } from '../json-data.ts'
import { compileData } from '../validation.ts'
import { fieldToSchema, optionValues } from './derive/json-schema.ts'
import { checkExpression, type CheckedExpression, type ExprField } from './expression-check.ts'
import { evaluate } from './expression-eval.ts'
import { ExpressionError, type ExprType } from './expressions.ts'
import type { FieldDefinition, ModuleDefinition } from './types.ts'

/**
 * A module's computed fields, defaults and rules (docs/modules.md, "Computed fields", "Defaults", "Rules"): their
 * expressions parsed and checked once, at load (`compileFieldRules`, errors naming the field and the column), then
 * applied by the write rules (plugins/records/records.rules.ts) on every write path and by migrations.
 */

interface ComputedField {
  key: string
  type: FieldDefinition['type']
  expr: CheckedExpression
}

interface Rule {
  expr: CheckedExpression
  message: string
  fields: readonly string[]
  states?: ReadonlySet<string>
  transitions?: ReadonlySet<string>
}

export interface FieldRules {
  /** Computed fields in declaration order (each reads only those before it). */
  computed: readonly ComputedField[]
  computedKeys: ReadonlySet<string>
  defaults: ReadonlyArray<{ key: string; value: unknown } | { key: string; today: true }>
  rules: readonly Rule[]
  /** The fields expressions read, as they read them. */
  exprFields: ReadonlyMap<string, ExprField>
}

/** How an expression reads a field of each type; undefined: it cannot. */
const exprTypeOf: { [T in FieldDefinition['type']]: ExprType | undefined } = {
  text: 'text',
  longText: 'text',
  number: 'number',
  integer: 'number',
  boolean: 'boolean',
  date: 'date',
  datetime: 'datetime',
  singleChoice: 'text',
  multipleChoice: undefined,
  user: 'text',
  recordRef: 'text',
  group: undefined,
  location: undefined
}

/** What an expression must yield to compute a field of each type; undefined: the type cannot be computed. */
const computableAs: Partial<Record<FieldDefinition['type'], ExprType>> = {
  text: 'text',
  number: 'number',
  integer: 'number',
  boolean: 'boolean',
  date: 'date',
  singleChoice: 'text'
}

const optionsOf = (f: FieldDefinition) => ('options' in f ? optionValues(f) : undefined)

/**
 * Checks and compiles a definition's computed fields, defaults and rules; `fail(where, problem)` throws (the registry's
 * ModuleDefinitionError). Called once per module load.
 */
export function compileFieldRules(def: ModuleDefinition, fail: (where: string, problem: string) => never): FieldRules {
  const exprFields = new Map<string, ExprField>()
  const unusable = new Map<string, string>()
  for (const f of def.fields) {
    const type = exprTypeOf[f.type]
    if (type) exprFields.set(f.key, { type, options: f.type === 'singleChoice' ? optionsOf(f) : undefined })
    else unusable.set(f.key, `is a ${f.type} field, which expressions do not read`)
  }
  const check = (where: string, member: string, source: unknown, env: Parameters<typeof checkExpression>[1]) => {
    if (typeof source !== 'string') return fail(where, `${member} must be an expression written as text`)
    try {
      return checkExpression(source, env)
    } catch (err) {
      // A long source is quoted by its start: the column says where the problem is.
      const quoted = source.length > 80 ? `${source.slice(0, 77)}...` : source
      if (err instanceof ExpressionError) return fail(where, `${member} ${JSON.stringify(quoted)}: ${err.message}`)
      throw err
    }
  }

  // Computed fields: each reads the plain fields and the computed ones declared before it.
  const computedKeys = new Set(
    def.fields.filter((f) => (f as { computed?: unknown }).computed !== undefined).map((f) => f.key)
  )
  const readable = new Map([...exprFields].filter(([k]) => !computedKeys.has(k)))
  const notYet = new Map(unusable)
  for (const k of computedKeys) notYet.set(k, 'is computed after this field (a computed field reads those before it)')
  const computed: ComputedField[] = []
  const defaults: FieldRules['defaults'][number][] = []
  for (const f of def.fields) {
    const where = `field "${f.key}"`
    const m = f as { computed?: unknown; default?: unknown }
    for (const inner of f.type === 'group' ? f.fields : [])
      for (const member of ['computed', 'default'] as const)
        if ((inner as unknown as Record<string, unknown>)[member] !== undefined)
          fail(
            `field "${f.key}.${inner.key}"`,
            `${member} applies to top-level fields only, not to the members of a group`
          )
    if (m.computed !== undefined) {
      const as = computableAs[f.type]
      if (!as)
        fail(where, `a ${f.type} field cannot be computed (computed fields: ${Object.keys(computableAs).join(', ')})`)
      if (f.required) fail(where, 'a computed field cannot be required: clients do not send it')
      if (m.default !== undefined) fail(where, 'a computed field cannot have a default')
      notYet.set(f.key, 'is this computed field itself')
      const expr = check(where, 'computed', m.computed, { fields: readable, unusable: notYet })
      if (expr.type !== as) fail(where, `computed yields ${expr.type}, but a ${f.type} field holds ${as}`)
      if (f.type === 'singleChoice') {
        const options = optionsOf(f)!
        if (!expr.texts)
          fail(where, `computed may yield any text, but a choice holds only its options: ${options.join(', ')}`)
        const stray = [...expr.texts].filter((v) => !options.includes(v))
        if (stray.length)
          fail(where, `computed may yield ${stray.map((v) => `"${v}"`).join(', ')}, which the options do not list`)
      }
      // Whoever reads the computed value could work out the fields it reads from it: each reader of it must be a
      // reader of each of them (a field with an access rule is read by its roles only).
      const readers = (x: FieldDefinition) => (x.access ? new Set(x.access.read) : undefined)
      for (const r of expr.reads) {
        const source = def.fields.find((x) => x.key === r)
        const allowed = source && readers(source)
        if (!allowed) continue
        const mine = readers(f)
        const beyond = mine ? [...mine].filter((role) => !allowed.has(role)) : undefined
        if (!mine || beyond!.length)
          fail(
            where,
            `computed reads "${r}", which only ${[...allowed].join(', ')} may read, so its value would tell ${mine ? beyond!.join(', ') : 'every reader of the module'} what "${r}" holds: give this field an access rule whose read roles are among ${[...allowed].join(', ')}`
          )
      }
      computed.push({ key: f.key, type: f.type, expr })
      notYet.delete(f.key)
      readable.set(f.key, exprFields.get(f.key)!)
    }
    if (m.default !== undefined) {
      if (f.type === 'date' && m.default === 'today()') {
        defaults.push({ key: f.key, today: true })
        continue
      }
      const valid = compileData((fieldToSchema[f.type] as (f: FieldDefinition) => object)(f))
      if (!valid(m.default))
        fail(
          where,
          `default ${JSON.stringify(m.default)} is not a value of the field${f.type === 'date' ? " (a date 'YYYY-MM-DD', or 'today()')" : ''}`
        )
      defaults.push({ key: f.key, value: structuredClone(m.default) })
    }
  }

  const rules: Rule[] = []
  const fieldKeys = new Set(def.fields.map((f) => f.key))
  const states = new Set(def.workflow.states.map((s) => s.key))
  const transitions = new Set(def.workflow.transitions.map((t) => t.key))
  if (def.rules !== undefined && !Array.isArray(def.rules)) fail('rules', 'must be an array of rules')
  for (const [i, r] of (def.rules ?? []).entries()) {
    const where = `rules[${i}]`
    if (typeof r?.message !== 'string' || r.message.trim() === '') fail(where, 'message must be non-empty text')
    const expr = check(where, 'check', r.check, { fields: exprFields, unusable, today: true })
    if (expr.type !== 'boolean') fail(where, `check yields ${expr.type}; it must yield true or false`)
    const list = (v: unknown) => v === undefined || (Array.isArray(v) && v.every((x) => typeof x === 'string'))
    if (!list(r.fields) || !list(r.on?.states) || !list(r.on?.transitions))
      fail(where, 'fields, on.states and on.transitions must be lists of keys')
    for (const k of r.fields ?? []) if (!fieldKeys.has(k)) fail(where, `fields names unknown field "${k}"`)
    for (const s of r.on?.states ?? []) if (!states.has(s)) fail(where, `on.states names unknown state "${s}"`)
    for (const t of r.on?.transitions ?? [])
      if (!transitions.has(t)) fail(where, `on.transitions names unknown transition "${t}"`)
    const fields = r.fields?.length ? r.fields : [...expr.reads]
    if (!fields.length) fail(where, 'fields must name the fields the message is about (the check reads none)')
    rules.push({
      expr,
      message: r.message,
      fields,
      ...(r.on ? { states: new Set(r.on.states ?? []), transitions: new Set(r.on.transitions ?? []) } : {})
    })
  }
  return { computed, computedKeys, defaults, rules, exprFields }
}

/** Today's date (UTC) by the platform's clock, as expressions see it. */
export function today(): string {
  return utcDay(clock().now())
}

/** The payload with the defaults of the fields it has no value for (a create). */
export function withDefaults(r: FieldRules, payload: Record<string, unknown>, day = today()): Record<string, unknown> {
  if (!r.defaults.length) return payload
  const out = dataObject(payload)
  for (const d of r.defaults) if (out[d.key] === undefined) out[d.key] = 'today' in d ? day : structuredClone(d.value)
  return out
}

/** The payload with every computed field computed afresh (absent when its expression has no value). */
export function withComputed(r: FieldRules, payload: Record<string, unknown>): Record<string, unknown> {
  if (!r.computed.length) return payload
  const out = dataObject(payload)
  for (const c of r.computed) {
    // A computed value never reads today(), so the date given is never read.
    let v = evaluate(c.expr, { payload: out, fields: r.exprFields, today: '' })
    if (typeof v === 'number' && c.type === 'integer') v = Math.round(v)
    if (v === null) delete out[c.key]
    else out[c.key] = v
  }
  return out
}

/** A client's payload naming a computed field: one problem per such field (the field is read-only). */
export function computedProblems(r: FieldRules, payload: Record<string, unknown>): FieldProblem[] {
  return Object.keys(payload)
    .filter((k) => r.computedKeys.has(k))
    .map((k) => ({
      pointer: `/payload/${k}`,
      field: `payload.${k}`,
      code: 'readOnly',
      detail: `is computed by the platform (${r.computed.find((c) => c.key === k)!.expr.source}) and cannot be sent; leave it out`
    }))
}

/**
 * A new record's values as the module makes them from what was sent (a client's create, a recurrence's payload): a
 * computed field sent is refused (`refused`, one problem each), the others' defaults filled in and the computed fields
 * computed (`payload`, what the schema and the rules on creates then judge). The one first step of every create:
 * records.rules.ts createRules and the registry's load check of a recurrence both take it.
 */
export function plannedCreate(
  r: FieldRules,
  sent: Record<string, unknown>
): { refused: FieldProblem[]; payload: Record<string, unknown> } {
  return { refused: computedProblems(r, sent), payload: withComputed(r, withDefaults(r, sent)) }
}

/** Which write a rule is judged on. */
export interface RuleOccasion {
  /** The fields the write changes; undefined: a create. */
  changed?: ReadonlySet<string>
  /** The transition it fires, if any. */
  transition?: string
  /** The state the write enters (a create's initial state, a transition's target), if any. */
  enters?: string
}

/** The problems of the rules a write breaks: one per field each names, with its message. */
export function ruleProblems(
  r: FieldRules,
  payload: Record<string, unknown>,
  occasion: RuleOccasion,
  day = today()
): FieldProblem[] {
  const out: FieldProblem[] = []
  for (const rule of r.rules) {
    const applies = rule.states
      ? (occasion.enters !== undefined && rule.states.has(occasion.enters)) ||
        (occasion.transition !== undefined && rule.transitions!.has(occasion.transition))
      : !occasion.changed || [...rule.expr.reads].some((k) => occasion.changed!.has(k))
    if (!applies) continue
    if (evaluate(rule.expr, { payload, fields: r.exprFields, today: day }) !== false) continue
    for (const f of rule.fields)
      out.push({ pointer: `/payload/${f}`, field: `payload.${f}`, code: 'rule', detail: rule.message })
  }
  return out
}
