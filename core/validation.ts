import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { ErrorObject, ValidateFunction } from 'ajv'
import { problems, type FieldProblem } from './errors/index.ts'

/** Validates request bodies and payloads: no coercion, every error reported. */
export const dataAjv = addFormats.default(new Ajv({ allErrors: true, verbose: true, strict: false, coerceTypes: false, useDefaults: false }), ['date', 'date-time', 'uuid', 'email', 'uri'])

/** Validates query strings: values arrive as strings and are coerced to the declared types. */
export const queryAjv = addFormats.default(new Ajv({ allErrors: true, strict: false, coerceTypes: 'array', useDefaults: true }), ['date', 'date-time', 'uuid'])

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
for (const ajv of [dataAjv, queryAjv]) {
  for (const name of ['date', 'date-time']) {
    const base = ajv.formats[name] as { validate: (s: string) => boolean; compare?: (a: string, b: string) => number | undefined }
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


function pointerToField(pointer: string) {
  return pointer.replace(/^\//, '').replace(/\//g, '.') || '(body)'
}

/** Turns Ajv errors into field problems that name the field and, where known, the allowed values. */
export function fieldProblems(errors: ErrorObject[] | null | undefined, root = ''): FieldProblem[] {
  const out: FieldProblem[] = []
  for (const e of errors ?? []) {
    let pointer = root + e.instancePath
    let detail = e.message ?? 'is invalid'
    let allowed: unknown[] | undefined
    switch (e.keyword) {
      case 'required':
        pointer += `/${e.params.missingProperty}`
        detail = 'is required'
        break
      case 'additionalProperties':
        pointer += `/${e.params.additionalProperty}`
        allowed = Object.keys((e.parentSchema as any)?.properties ?? {})
        detail = `is not an accepted field; allowed fields: ${allowed.join(', ')}`
        break
      case 'enum':
        allowed = e.params.allowedValues
        detail = `must be one of: ${allowed!.join(', ')}`
        break
      case 'format':
        detail = `must be ${e.params.format === 'date-time' ? 'an ISO 8601 date-time with a timezone, e.g. 2026-03-01T08:30:00Z' : e.params.format === 'date' ? 'a date, YYYY-MM-DD' : `in ${e.params.format} format`}`
        break
      case 'type':
        detail = `must be ${/^[aeiou]/.test(e.params.type) ? 'an' : 'a'} ${e.params.type}`
        break
    }
    // Ajv reports an enum inside an array item once per item; keep the first of each pointer+keyword.
    if (out.some((p) => p.pointer === pointer && p.code === e.keyword)) continue
    out.push({ pointer, field: pointerToField(pointer), code: e.keyword, detail, ...(allowed ? { allowed } : {}) })
  }
  return out
}

export function validationError(list: FieldProblem[]) {
  const detail = list.map((p) => `${p.field} ${p.detail}`).join('; ')
  return problems.validation(detail, list)
}

/** Validates `value` and throws a 400 `field.invalid` problem naming every failing field. */
export function assertValid<T>(validate: ValidateFunction, value: unknown, root = ''): asserts value is T {
  if (!validate(value)) throw validationError(fieldProblems(validate.errors, root))
}
