/**
 * The pieces of Runscope's semantics a test export relies on: `{{variable}}` templates,
 * JSON properties such as `Resources[0].emails[0].value`, the assertion comparisons, and
 * the JavaScript sandbox of its scripts (`variables`, `assert`, `log`, `response`).
 * Runscope itself is gone (BlazeMeter); where its documentation left a detail open, the
 * choice made here is written beside the code.
 */
import { isDeepStrictEqual } from 'node:util'
import vm from 'node:vm'

export type Variables = Map<string, string>

const randomString = (length: number) => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  return Array.from({ length }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('')
}

/** Runscope's built-in template functions, for names no variable holds. */
function builtIn(expression: string): string | undefined {
  const call = expression.match(/^(\w+)(?:\((.*)\))?$/)
  if (!call) return undefined
  const args = call[2] === undefined ? [] : call[2].split(',').map((a) => a.trim())
  switch (call[1]) {
    case 'timestamp':
      return String(Math.floor(Date.now() / 1000))
    case 'utc_datetime':
      return new Date().toISOString()
    case 'random_int': {
      const [low, high] = args.length === 2 ? args.map(Number) : [0, 2 ** 31 - 1]
      return String(low + Math.floor(Math.random() * (high - low + 1)))
    }
    case 'random_string':
      return randomString(args.length ? Number(args[0]) : 16)
    default:
      return undefined
  }
}

/**
 * Fills `{{name}}` from the variables, else from Runscope's built-ins; a name neither
 * knows stays as written (as Runscope sends it) and is added to `unresolved`.
 */
export function substitute(template: string, variables: Variables, unresolved?: Set<string>): string {
  return template.replace(/\{\{\s*([^{}]+?)\s*\}\}/g, (whole, name: string) => {
    const value = variables.get(name) ?? builtIn(name)
    if (value === undefined) unresolved?.add(name)
    return value ?? whole
  })
}

/** `Resources[0].name.familyName` → ['Resources', 0, 'name', 'familyName']; '' is the whole body. */
export function parseProperty(property: string | null | undefined): Array<string | number> {
  const text = (property ?? '').trim().replace(/^\$\.?/, '')
  const segments: Array<string | number> = []
  const token = /\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\['([^']*)'\]|([^.[\]]+)|(\.)/gy
  let m: RegExpExecArray | null
  while (token.lastIndex < text.length && (m = token.exec(text))) {
    if (m[1] !== undefined) segments.push(Number(m[1]))
    else if (m[2] !== undefined) segments.push(JSON.parse(`"${m[2]}"`))
    else if (m[3] !== undefined) segments.push(m[3])
    else if (m[4] !== undefined) segments.push(/^\d+$/.test(m[4]) ? Number(m[4]) : m[4])
  }
  if (token.lastIndex < text.length) throw new Error(`cannot read the property "${property}"`)
  return segments
}

/** The value at a parsed property, or undefined when any step of it is missing. */
export function valueAt(json: unknown, segments: Array<string | number>): unknown {
  let here = json
  for (const segment of segments) {
    if (Array.isArray(here) && typeof segment === 'number') here = here[segment]
    else if (here !== null && typeof here === 'object' && Object.hasOwn(here, segment))
      here = (here as Record<string, unknown>)[String(segment)]
    else return undefined
  }
  return here
}

/** How Runscope compares a value as text: strings as they are, everything else as JSON. */
export function asText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined')
}

const asNumber = (value: unknown) =>
  typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  v === '' ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && Object.keys(v).length === 0)
const compareNumbers = (test: (a: number, b: number) => boolean) => (actual: unknown, expected: string) => {
  const [a, b] = [asNumber(actual), asNumber(expected)]
  return Number.isFinite(a) && Number.isFinite(b) && test(a, b)
}
/**
 * `contains` on a list means "has an item equal to" (the schemas list of a SCIM resource is
 * what Okta's test asks it of), on an object "has the key", on anything else "the text
 * contains".
 */
const contains = (actual: unknown, expected: string) =>
  Array.isArray(actual)
    ? actual.some((item) => asText(item) === expected)
    : actual !== null && typeof actual === 'object'
      ? Object.hasOwn(actual, expected)
      : actual !== undefined && asText(actual).includes(expected)

/**
 * Runscope's comparisons. `expected` is the assertion's value after templates. A missing
 * value fails every comparison but those that ask for its absence (empty, not_equal,
 * does_not_contain). `is_a_number` wants a JSON number: SCIM's counts are integers, and a
 * numeric string would be a server defect worth seeing.
 */
export const comparisons: Record<string, (actual: unknown, expected: string) => boolean> = {
  equal: (a, e) => a !== undefined && asText(a) === e,
  not_equal: (a, e) => a === undefined || asText(a) !== e,
  empty: (a) => isEmpty(a),
  not_empty: (a) => !isEmpty(a),
  contains,
  does_not_contain: (a, e) => !contains(a, e),
  has_key: (a, e) => a !== null && typeof a === 'object' && !Array.isArray(a) && Object.hasOwn(a, e),
  has_value: (a, e) =>
    (Array.isArray(a) ? a : a !== null && typeof a === 'object' ? Object.values(a) : []).some(
      (item) => asText(item) === e
    ),
  is_null: (a) => a === null,
  is_a_number: (a) => typeof a === 'number' && Number.isFinite(a),
  equal_number: compareNumbers((a, b) => a === b),
  is_less_than: compareNumbers((a, b) => a < b),
  is_less_than_or_equal: compareNumbers((a, b) => a <= b),
  is_greater_than: compareNumbers((a, b) => a > b),
  is_greater_than_or_equal: compareNumbers((a, b) => a >= b)
}

class ScriptAssertionError extends Error {}

/** One `assert…` call a script made. */
export interface ScriptAssertion {
  name: string
  passed: boolean
  message?: string
}

export interface ScriptOutcome {
  assertions: ScriptAssertion[]
  /** A script that threw something other than a failed assertion. */
  error?: string
  logs: string[]
}

/**
 * Chai's `assert` as far as scripts are likely to use it; each call counts as one
 * assertion, a failed one stops the script as Chai's throw does, and a method Chai has but
 * this does not throws, naming itself, so a script never passes by a missing method.
 */
function makeAssert(record: ScriptAssertion[]) {
  const check = (name: string, ok: boolean, message: string | undefined, fallback: string) => {
    record.push({
      name: message ? `${name}: ${message}` : name,
      passed: ok,
      message: ok ? undefined : (message ?? fallback)
    })
    if (!ok) throw new ScriptAssertionError(message ?? fallback)
  }
  const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : asText(v))
  const includes = (hay: unknown, needle: unknown) =>
    typeof hay === 'string'
      ? hay.includes(String(needle))
      : Array.isArray(hay)
        ? hay.some((x) => isDeepStrictEqual(x, needle))
        : hay !== null &&
          typeof hay === 'object' &&
          needle !== null &&
          typeof needle === 'object' &&
          Object.entries(needle).every(([k, v]) => isDeepStrictEqual((hay as Record<string, unknown>)[k], v))
  const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a Postman script calls these with anything; each method's parameters say what it reads
  const methods: Record<string, (...args: any[]) => void> = {
    ok: (v, m) => check('assert.ok', Boolean(v), m, `expected ${show(v)} to be truthy`),
    isOk: (v, m) => check('assert.isOk', Boolean(v), m, `expected ${show(v)} to be truthy`),
    notOk: (v, m) => check('assert.notOk', !v, m, `expected ${show(v)} to be falsy`),
    isNotOk: (v, m) => check('assert.isNotOk', !v, m, `expected ${show(v)} to be falsy`),
    equal: (a, b, m) => check('assert.equal', a == b, m, `expected ${show(a)} to equal ${show(b)}`),
    notEqual: (a, b, m) => check('assert.notEqual', a != b, m, `expected ${show(a)} to not equal ${show(b)}`),
    strictEqual: (a, b, m) => check('assert.strictEqual', a === b, m, `expected ${show(a)} to equal ${show(b)}`),
    notStrictEqual: (a, b, m) =>
      check('assert.notStrictEqual', a !== b, m, `expected ${show(a)} to not equal ${show(b)}`),
    deepEqual: (a, b, m) =>
      check('assert.deepEqual', isDeepStrictEqual(a, b), m, `expected ${show(a)} to deeply equal ${show(b)}`),
    notDeepEqual: (a, b, m) =>
      check('assert.notDeepEqual', !isDeepStrictEqual(a, b), m, `expected ${show(a)} to not deeply equal ${show(b)}`),
    isTrue: (v, m) => check('assert.isTrue', v === true, m, `expected ${show(v)} to be true`),
    isFalse: (v, m) => check('assert.isFalse', v === false, m, `expected ${show(v)} to be false`),
    isNull: (v, m) => check('assert.isNull', v === null, m, `expected ${show(v)} to be null`),
    isNotNull: (v, m) => check('assert.isNotNull', v !== null, m, 'expected a value other than null'),
    isDefined: (v, m) => check('assert.isDefined', v !== undefined, m, 'expected a defined value'),
    isUndefined: (v, m) => check('assert.isUndefined', v === undefined, m, `expected ${show(v)} to be undefined`),
    exists: (v, m) => check('assert.exists', v !== null && v !== undefined, m, `expected ${show(v)} to exist`),
    isArray: (v, m) => check('assert.isArray', Array.isArray(v), m, `expected ${show(v)} to be an array`),
    isObject: (v, m) => check('assert.isObject', kindOf(v) === 'object', m, `expected ${show(v)} to be an object`),
    isString: (v, m) => check('assert.isString', typeof v === 'string', m, `expected ${show(v)} to be a string`),
    isNumber: (v, m) => check('assert.isNumber', typeof v === 'number', m, `expected ${show(v)} to be a number`),
    isBoolean: (v, m) => check('assert.isBoolean', typeof v === 'boolean', m, `expected ${show(v)} to be a boolean`),
    typeOf: (v, t, m) => check('assert.typeOf', kindOf(v) === t, m, `expected ${show(v)} to be of type ${t}`),
    include: (hay, needle, m) =>
      check('assert.include', includes(hay, needle), m, `expected ${show(hay)} to include ${show(needle)}`),
    notInclude: (hay, needle, m) =>
      check('assert.notInclude', !includes(hay, needle), m, `expected ${show(hay)} to not include ${show(needle)}`),
    lengthOf: (v, n, m) =>
      check(
        'assert.lengthOf',
        (v as { length?: number } | null)?.length === n,
        m,
        `expected ${show(v)} to have a length of ${n}`
      ),
    property: (o, p, m) =>
      check(
        'assert.property',
        o !== null && o !== undefined && p in Object(o),
        m,
        `expected ${show(o)} to have a property ${show(p)}`
      ),
    match: (v, re, m) =>
      check('assert.match', re instanceof RegExp && re.test(String(v)), m, `expected ${show(v)} to match ${re}`),
    isAbove: (v, n, m) => check('assert.isAbove', v > n, m, `expected ${show(v)} to be above ${n}`),
    isBelow: (v, n, m) => check('assert.isBelow', v < n, m, `expected ${show(v)} to be below ${n}`),
    fail: (m) => check('assert.fail', false, m, 'assert.fail()')
  }
  const assert = (value: unknown, message?: string) =>
    check('assert', Boolean(value), message, `expected ${show(value)} to be truthy`)
  return new Proxy(assert, {
    get(target, key) {
      if (typeof key === 'string' && Object.hasOwn(methods, key)) return methods[key]
      if (typeof key === 'symbol' || key === 'prototype' || key in Function.prototype) return Reflect.get(target, key)
      throw new Error(
        `assert.${String(key)} is not implemented by this Runscope runner (scripts/scim-peers/runscope-checks.ts)`
      )
    }
  })
}

/**
 * Runs one Runscope script in its own V8 context with what Runscope gave scripts:
 * `variables.get/set`, `assert`, `log`, and `request` / `response` when the step has them
 * (`response.body` is the text, `response.headers` a name → values map). Anything else it
 * names (`_`, `moment`, `expect`) is a ReferenceError, reported as a script error.
 */
export function runScript(
  code: string,
  variables: Variables,
  extra: { request?: object; response?: object; filename?: string } = {}
): ScriptOutcome {
  const outcome: ScriptOutcome = { assertions: [], logs: [] }
  const context = vm.createContext({
    variables: {
      get: (name: string) => variables.get(String(name)),
      set: (name: string, value: unknown) =>
        void variables.set(String(name), value === undefined || value === null ? '' : String(value))
    },
    assert: makeAssert(outcome.assertions),
    log: (...args: unknown[]) =>
      void outcome.logs.push(args.map((a) => (typeof a === 'string' ? a : asText(a))).join(' ')),
    ...(extra.request ? { request: extra.request } : {}),
    ...(extra.response ? { response: extra.response } : {})
  })
  try {
    vm.runInContext(code, context, { filename: extra.filename ?? 'runscope-script.js', timeout: 5000 })
  } catch (err) {
    if (!(err instanceof ScriptAssertionError)) outcome.error = (err as Error)?.message ?? String(err)
  }
  return outcome
}
