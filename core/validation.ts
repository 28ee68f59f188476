import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { problems, type FieldProblem } from './errors/index.ts'
import { fieldOf, jsonLimits } from './json-data.ts'

/** Validates request bodies and payloads: no coercion, every error reported. */
export const dataAjv = addFormats.default(
  new Ajv({ allErrors: true, verbose: true, strict: false, coerceTypes: false, useDefaults: false }),
  ['date', 'date-time', 'uuid', 'email', 'uri']
)

/** The same rules, stopping at the first error: for bodies too large to list every error of (see validationProblems). */
const firstErrorAjv = addFormats.default(
  new Ajv({ allErrors: false, verbose: true, strict: false, coerceTypes: false, useDefaults: false }),
  ['date', 'date-time', 'uuid', 'email', 'uri']
)

/** Validates query strings: values arrive as strings and are coerced to the declared types (compile with `compileQuery`). */
const queryAjv = addFormats.default(
  new Ajv({ allErrors: true, verbose: true, strict: false, coerceTypes: 'array', useDefaults: true }),
  ['date', 'date-time', 'uuid']
)

const decimal = /^(0|-?[1-9][0-9]*)$/

/**
 * Compiles a query schema. A whole-number parameter must be written as one, in decimal
 * digits, within its bounds: Ajv's coercion reads a string with `Number()`, so `limit=1e1`,
 * `0x10`, ` 7` or `010` would pass as numbers; they are refused, naming the range. Internal
 * callers may pass numbers.
 */
export function compileQuery(schema: { properties?: object }): ValidateFunction {
  const validate = queryAjv.compile(schema)
  const integers = Object.entries(
    (schema.properties ?? {}) as Record<string, { type?: unknown; minimum?: number; maximum?: number }>
  ).filter(([, s]) => s.type === 'integer')
  if (!integers.length) return validate
  const inRange = (n: number, s: { minimum?: number; maximum?: number }) =>
    Number.isSafeInteger(n) &&
    (s.minimum === undefined || n >= s.minimum) &&
    (s.maximum === undefined || n <= s.maximum)
  const checked = ((data: Record<string, unknown> | undefined) => {
    for (const [name, s] of integers) {
      const raw = data?.[name]
      if (
        raw === undefined ||
        (typeof raw === 'number' && inRange(raw, s)) ||
        (typeof raw === 'string' && decimal.test(raw) && inRange(Number(raw), s))
      )
        continue
      checked.errors = [
        {
          instancePath: `/${name}`,
          schemaPath: `#/properties/${name}`,
          keyword: 'wholeNumber',
          params: { minimum: s.minimum, maximum: s.maximum },
          message: 'must be a whole number'
        }
      ]
      return false
    }
    const ok = validate(data)
    checked.errors = validate.errors
    return ok
  }) as ValidateFunction
  checked.schema = validate.schema
  return checked
}

/**
 * RFC 3339 admits values PostgreSQL cannot cast: year 0000, offsets past ±15:59 and a
 * fractional leap second. One such value stored in a payload made every list filter on
 * its field fail with a 500, so both Ajv instances refuse them.
 */
function postgresCanHold(value: string): boolean {
  if (value.startsWith('0000')) return false
  const offset = /([+-])(\d\d):?(\d\d)?$/.exec(value.slice(10))
  if (offset && Number(offset[2]) * 60 + Number(offset[3] ?? 0) > 15 * 60 + 59) return false
  return !/:60\.\d*[1-9]/.test(value)
}
for (const ajv of [dataAjv, queryAjv, firstErrorAjv]) {
  for (const name of ['date', 'date-time']) {
    const base = ajv.formats[name] as {
      validate: (s: string) => boolean
      compare?: (a: string, b: string) => number | undefined
    }
    ajv.addFormat(name, { ...base, validate: (s: string) => base.validate(s) && postgresCanHold(s) })
  }
}
const formatCheckers = {
  date: dataAjv.compile({ type: 'string', format: 'date' }),
  'date-time': dataAjv.compile({ type: 'string', format: 'date-time' })
}

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether `value` is a UUID in its canonical text form (record, user and token ids). */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidShape.test(value)
}

/** Whether `value` is a valid date or date-time by the same rules as payloads (list filters use it). */
export function isFormat(format: keyof typeof formatCheckers, value: string): boolean {
  return formatCheckers[format](value)
}

/** The values an `anyOf` allows when each of its branches is a constant or a list of them (a TypeBox union of literals), else undefined. */
function constantsOf(branches: unknown): unknown[] | undefined {
  if (!Array.isArray(branches) || !branches.length) return undefined
  const values: unknown[] = []
  for (const b of branches as Array<Record<string, unknown>>) {
    if (b && 'const' in b) values.push(b.const)
    else if (b && Array.isArray(b.enum)) values.push(...b.enum)
    else return undefined
  }
  return values
}

/**
 * Edit distance of two short names, for "did you mean": case differences cost nothing, and two
 * neighbouring letters swapped (`wirte`) count as one slip, as a typist makes it.
 */
function distance(a: string, b: string): number {
  a = a.toLowerCase()
  b = b.toLowerCase()
  let before: number[] = []
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1)
    }
    before = prev
    prev = row
  }
  return prev[b.length]
}

/** The allowed name closest to `given` when it is a likely slip (a wrong case, a typo or two), else undefined. */
export function closestName(given: string, allowed: readonly unknown[]): string | undefined {
  if (given.length > 100) return undefined
  let best: string | undefined
  let bestDistance = Infinity
  for (const name of allowed) {
    if (typeof name !== 'string') continue
    const d = distance(given, name)
    if (d < bestDistance) [best, bestDistance] = [name, d]
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.min(2, Math.floor(given.length / 3))) ? best : undefined
}

function oneOf(allowed: unknown[], given: unknown): string {
  const hint = typeof given === 'string' ? closestName(given, allowed) : undefined
  return `must be one of: ${allowed.map(String).join(', ')}${hint !== undefined ? ` (did you mean ${hint}?)` : ''}`
}

/** One Ajv error as a field problem that names the field and, where known, the allowed values. */
function fieldProblem(e: ErrorObject, root: string): FieldProblem {
  let pointer = root + e.instancePath
  let detail = e.message ?? 'is invalid'
  let allowed: unknown[] | undefined
  let code = e.keyword
  switch (e.keyword) {
    case 'required':
      pointer += `/${e.params.missingProperty}`
      detail = 'is required'
      break
    case 'additionalProperties': {
      pointer += `/${e.params.additionalProperty}`
      allowed = Object.keys((e.parentSchema?.properties as Record<string, unknown> | undefined) ?? {})
      const hint = closestName(String(e.params.additionalProperty), allowed)
      detail = `is not an accepted field; ${hint ? `did you mean ${hint}? ` : ''}allowed fields: ${allowed.join(', ') || 'none'}`
      break
    }
    case 'enum':
      allowed = e.params.allowedValues
      detail = oneOf(allowed!, e.data)
      break
    case 'const':
      allowed = [e.params.allowedValue]
      detail = oneOf(allowed, e.data)
      code = 'enum'
      break
    case 'anyOf': {
      const values = constantsOf(e.schema)
      if (values) {
        allowed = values
        detail = oneOf(values, e.data)
        code = 'enum'
      }
      break
    }
    case 'wholeNumber': {
      const { minimum, maximum } = e.params as { minimum?: number; maximum?: number }
      const range =
        minimum !== undefined && maximum !== undefined
          ? ` from ${minimum} to ${maximum}`
          : minimum !== undefined
            ? ` of at least ${minimum}`
            : maximum !== undefined
              ? ` of at most ${maximum}`
              : ''
      detail = `must be a whole number${range}, written in decimal digits`
      break
    }
    case 'format':
      detail = `must be ${e.params.format === 'date-time' ? 'an ISO 8601 date-time with a timezone, e.g. 2026-03-01T08:30:00Z' : e.params.format === 'date' ? 'a date, YYYY-MM-DD' : `in ${e.params.format} format`}`
      break
    case 'type':
      detail = `must be ${/^[aeiou]/.test(e.params.type) ? 'an' : 'a'} ${e.params.type}`
      break
  }
  return { pointer, field: fieldOf(pointer), code, detail, ...(allowed ? { allowed } : {}) }
}

/**
 * The schema paths of `anyOf`s whose branches are all constants: their branch errors
 * ("must be equal to constant", once per branch) are left out, and the `anyOf` error
 * itself says "must be one of: …".
 */
function constantUnions(errors: ErrorObject[]): Map<string, string[]> {
  const unions = new Map<string, string[]>()
  for (const e of errors) {
    if (e.keyword !== 'anyOf' || !constantsOf(e.schema)) continue
    const at = unions.get(e.instancePath)
    if (at) at.push(`${e.schemaPath}/`)
    else unions.set(e.instancePath, [`${e.schemaPath}/`])
  }
  return unions
}

function boundedProblems(
  errors: ErrorObject[] | null | undefined,
  root: string
): { list: FieldProblem[]; more: boolean } {
  const list: FieldProblem[] = []
  const seen = new Set<string>()
  const unions = errors?.length ? constantUnions(errors) : new Map<string, string[]>()
  for (const e of errors ?? []) {
    // A constant branch's error sits at the union's own instance path (constants are scalars).
    if (unions.size && e.keyword !== 'anyOf' && unions.get(e.instancePath)?.some((u) => e.schemaPath.startsWith(u)))
      continue
    const p = fieldProblem(e, root)
    const key = `${p.pointer}\u0000${p.code}`
    if (seen.has(key)) continue
    if (list.length === jsonLimits.maxProblems) return { list, more: true }
    seen.add(key)
    list.push(p)
  }
  return { list, more: false }
}

/** Problems spelled out in a problem's `detail`; `errors` lists them all (up to `jsonLimits.maxProblems`). */
const detailProblems = 10

/** A 400 `field.invalid` naming each field; `more` says the list stops short of every problem. */
export function validationError(list: FieldProblem[], more = false) {
  const shown = list.slice(0, detailProblems).map((p) => `${p.field} ${p.detail}`)
  if (list.length > detailProblems) shown.push(`and ${list.length - detailProblems} more listed in errors`)
  if (more)
    shown.push(`and more problems, not listed (at most ${jsonLimits.maxProblems} are): fix these and send again`)
  return problems.validation(shown.join('; '), list, more)
}

/**
 * Above this many values, a body is first checked by a validator that stops at its first
 * error, and only that error is reported: listing every error of a 60,000-item array cost
 * Ajv (allErrors) as much CPU as a thousand ordinary requests. A valid body never gets
 * that large, since every array and string of a schema has a bound.
 */
const fullCheckValues = 10_000
const firstErrorValidators = new WeakMap<ValidateFunction, ValidateFunction>()

/** Whether a JSON value holds more than `limit` values (stops counting there). */
function largerThan(value: unknown, limit: number): boolean {
  const stack = [value]
  let n = 0
  while (stack.length) {
    const v = stack.pop()
    if (++n > limit) return true
    if (v && typeof v === 'object') for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push(child)
  }
  return false
}

/**
 * Compiles a body schema for `assertValid`: the validator that lists every error, and at
 * once its first-error twin, so no request pays the second compile.
 */
export function compileData(schema: object): ValidateFunction {
  const validate = dataAjv.compile(schema)
  firstErrorValidators.set(validate, firstErrorAjv.compile(schema))
  return validate
}

/** The problems of `value` under `validate`, at most `jsonLimits.maxProblems`, in CPU linear in the value's size; undefined when valid. */
export function validationProblems(
  validate: ValidateFunction,
  value: unknown,
  root = ''
): { list: FieldProblem[]; more: boolean } | undefined {
  if (!largerThan(value, fullCheckValues)) return validate(value) ? undefined : boundedProblems(validate.errors, root)
  let first = firstErrorValidators.get(validate)
  if (!first) firstErrorValidators.set(validate, (first = firstErrorAjv.compile(validate.schema as object)))
  if (first(value)) return undefined
  return { list: boundedProblems(first.errors, root).list, more: true }
}

/** Validates `value` and throws a 400 `field.invalid` problem naming every failing field. */
export function assertValid<T>(validate: ValidateFunction, value: unknown, root = ''): asserts value is T {
  const found = validationProblems(validate, value, root)
  if (found) throw validationError(found.list, found.more)
}
