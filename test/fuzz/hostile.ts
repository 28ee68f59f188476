import type { Kind } from './samples.ts'
import { cloneJson, obj, Raw, type JsonLike } from './wire.ts'

/**
 * The hostile values the fuzzer sends, by where they go. Mild ones come first in each list
 * because fast-check shrinks a `constantFrom` towards its first entry.
 */

export interface Hostile {
  label: string
  /** Built lazily: some are megabytes, and some need the request's own valid values. */
  make(full: () => JsonLike): JsonLike
}

// A fresh copy each time: later mutations write into the value they put in a body.
const h = (label: string, value: JsonLike): Hostile => ({ label, make: () => cloneJson(value) })
const raw = (text: string, label = text): Hostile => ({ label, make: () => new Raw(text, label) })
const deep = (n: number, open: string, leaf: string, close: string, label: string) =>
  raw(open.repeat(n) + leaf + close.repeat(n), label)
const polluted = () => obj([['polluted', 'yes']])

/** Strings: control characters, lone surrogates, look-alikes, lengths, injection shapes. */
export const strings: string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud800y',
  '\udfff\ud800',
  '\u0001\u0008\u001b\u007f\u0085',
  '\t\r\n',
  'caf\u0065\u0301', // NFD é
  'caf\u00e9', // NFC é
  '\u212a', // Kelvin sign (NFKC: K)
  'a\u200bb', // zero-width space
  '\u202egnp.exe', // right-to-left override
  '\ufeffbom',
  '\uff49\uff4e\uff43\uff49\uff44\uff45\uff4e\uff54', // fullwidth "incident"
  '\u0130\u0131\ufb01', // İ ı ﬁ: case mapping changes length
  '\ud83e\udde8', // a valid surrogate pair
  '%00',
  '%ED%A0%80',
  "'; DROP TABLE records; --",
  '${7*7}{{7*7}}',
  '../../../../etc/passwd',
  '__proto__',
  'constructor',
  'null',
  '1e400',
  'NaN',
  '-0',
  '0000-01-01T00:00:00Z',
  '2026-02-30T25:61:61Z',
  '+275760-09-13T00:00:00.001Z',
  '2026-11-20T08:30:60.5Z',
  '2026-11-20T08:30:00+16:00',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  'x'.repeat(201),
  'x'.repeat(20_001),
  'x'.repeat(300_000)
]

/** Numbers as raw JSON text: beyond double range, negative zero, past 2^53, odd spellings. */
export const numbers: string[] = [
  '-1',
  '1.5',
  '-0',
  '1e400',
  '-1e400',
  '9007199254740993',
  '-9007199254740993',
  '1e308',
  '5e-324',
  '2147483648',
  '1E2',
  '100000000000000000000000000000000000000',
  '0.000000000000000000000000000000000001',
  '-0.0'
]

/** Every JSON value kind but the expected one, empty containers among them. */
const wrongTypes: Hostile[] = [
  h('null', null),
  h('true', true),
  h('false', false),
  h('0', 0),
  h('[]', []),
  h('{}', obj()),
  h('[[]]', [[]]),
  h('[null]', [null]),
  h('{"":{}}', obj([['', obj()]])),
  h('"true"', 'true'),
  h('"1"', '1')
]

/** Nesting (the known 10,000-level failure among them), huge arrays and objects. */
const shapes: Hostile[] = [
  deep(100, '[', '', ']', "'['.repeat(100) + ']'.repeat(100)"),
  deep(5_000, '[', '', ']', "'['.repeat(5000) + ']'.repeat(5000)"),
  deep(5_000, '{"a":', '1', '}', `'{"a":'.repeat(5000) + '1' + '}'.repeat(5000)`),
  deep(10_000, '[', '', ']', "'['.repeat(10000) + ']'.repeat(10000)"),
  deep(10_000, '{"a":', '1', '}', `'{"a":'.repeat(10000) + '1' + '}'.repeat(10000)`),
  // 30,000: a quadratic check (uniqueItems) then takes seconds, not the minutes 100,000 would
  // block this process for (the server runs in it), and the run still ends to report it.
  raw(`[${'0,'.repeat(29_999)}0]`, 'an array of 30,000 zeros'),
  raw(`[${'{},'.repeat(9_999)}{}]`, 'an array of 10,000 empty objects'),
  raw(
    `[${Array.from({ length: 10_000 }, (_v, i) => `"bad-${i}"`).join(',')}]`,
    'an array of 10,000 distinct strings ("bad-0" … "bad-9999")'
  ),
  raw(
    `[${Array.from({ length: 2_000 }, () => '{"item":"\\u0000","result":"\\ud800","x":1e400}').join(',')}]`,
    'an array of 2,000 objects with NUL, a lone surrogate and 1e400'
  ),
  raw(
    `{${Array.from({ length: 10_000 }, (_v, i) => `"k${i}":${i}`).join(',')}}`,
    'an object with 10,000 keys "k0" … "k9999"'
  )
]

/** Objects that try to reach a prototype, including a full valid payload under `__proto__`. */
const prototypes: Hostile[] = [
  h('{"__proto__":{"polluted":"yes"}}', obj([['__proto__', polluted()]])),
  h('{"constructor":{"prototype":{"polluted":"yes"}}}', obj([['constructor', obj([['prototype', polluted()]])]])),
  h('{"prototype":{"polluted":"yes"}}', obj([['prototype', polluted()]])),
  h('{"__proto__":null}', obj([['__proto__', null]])),
  { label: '{"__proto__": <every field of the module, valid>}', make: (full) => obj([['__proto__', full()]]) },
  raw('{"__proto__":1,"__proto__":{"polluted":"yes"}}'),
  raw('{"a":1,"a":2}')
]

const stringValues = strings.map((s) =>
  h(JSON.stringify(s.length > 40 ? `${s.slice(0, 12)}…(${s.length} chars)` : s), s)
)
const numberValues = numbers.map((n) => raw(n))
const fullPayload: Hostile = { label: '<every field of the module, valid>', make: (full) => full() }

/** Values for a body member (mutation `set`) or a new member (mutation `key`). */
export const values: Hostile[] = [
  ...stringValues,
  ...numberValues,
  ...wrongTypes,
  ...shapes,
  ...prototypes,
  fullPayload
]

/** The hostile values of the kind a place expects (a `typed` mutation draws from these). */
export const valuesOf: Record<Kind, Hostile[]> = {
  text: stringValues,
  string: stringValues,
  number: [...numberValues, h('"1e400"', '1e400'), h('"NaN"', 'NaN')],
  enum: stringValues,
  boolean: [...wrongTypes, h('"true"', 'true'), raw('1')],
  object: [...prototypes, fullPayload, ...wrongTypes, ...shapes],
  array: [...shapes, ...wrongTypes],
  any: values
}

/** Member names to add next to the valid ones. */
export const keys: string[] = [
  'fuzzExtra',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  '',
  ' ',
  '\u0000',
  '\ud800',
  '$where',
  '$gt',
  'payload.title',
  'a\u200bb',
  '\u212a',
  'x'.repeat(10_000)
]

/** Look-alikes of a valid string (an enum value, a member name): each should be refused or kept apart. */
export const lookalikes: Array<{ label: string; f: (s: string) => string }> = [
  { label: 'upper-cased', f: (s) => s.toUpperCase() },
  { label: 'with a trailing space', f: (s) => `${s} ` },
  { label: 'with a zero-width space', f: (s) => `${s.slice(0, 1)}\u200b${s.slice(1)}` },
  { label: 'NFD-decomposed with a combining accent', f: (s) => `${s}\u0301`.normalize('NFD') },
  { label: "with 'k' as the Kelvin sign", f: (s) => (s.includes('k') ? s.replace('k', '\u212a') : `\u212a${s}`) },
  { label: "with 'i' as dotless ı", f: (s) => (s.includes('i') ? s.replace('i', '\u0131') : `${s}\u0131`) },
  { label: 'fullwidth', f: (s) => s.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)) },
  { label: 'wrapped in a bidi override', f: (s) => `\u202e${s}\u202c` },
  { label: 'with a NUL', f: (s) => `${s}\u0000` },
  { label: 'with a lone surrogate', f: (s) => `${s}\ud800` }
]

/** Whole bodies: malformed JSON, odd encodings, sizes, depths. */
export const rawBodies: Array<{ label: string; bytes: () => Buffer }> = [
  ...[
    '',
    ' ',
    'null',
    '[]',
    '{}',
    '"text"',
    '0',
    '1e400',
    '-0',
    '{',
    '}',
    '{"a":1,}',
    "{'a':1}",
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":1}{"b":2}',
    '{"a":1} x',
    '{"a":"\\u0000"}',
    '{"a":"\\ud800"}',
    '{"\\u0000":1}',
    '{"a":"\\x41"}',
    '{"a":01}',
    '[1,2',
    '\ufeff{}',
    '{"__proto__":{"polluted":"yes"}}',
    '{"constructor":{"prototype":{"polluted":"yes"}}}'
  ].map((text) => ({ label: JSON.stringify(text), bytes: () => Buffer.from(text, 'utf8') })),
  { label: "'['.repeat(5000) + ']'.repeat(5000)", bytes: () => Buffer.from('['.repeat(5_000) + ']'.repeat(5_000)) },
  {
    label: `'{"a":'.repeat(10000) + '1' + '}'.repeat(10000)`,
    bytes: () => Buffer.from('{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000))
  },
  { label: "'['.repeat(200000) (never closed)", bytes: () => Buffer.from('['.repeat(200_000)) },
  {
    label: 'invalid UTF-8: {"a":"<FF FE>"}',
    bytes: () => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])
  },
  {
    label: 'CESU-8 lone surrogate: {"a":"<ED A0 80>"}',
    bytes: () => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d])
  },
  { label: 'UTF-16LE {"a":1}', bytes: () => Buffer.from('\ufeff{"a":1}', 'utf16le') },
  { label: '{"a":"x…"} of 1 MiB + 1 byte', bytes: () => Buffer.from(`{"a":"${'x'.repeat(1_048_577 - 8)}"}`) }
]

/** NDJSON bodies for bulk loads. */
export const ndjsonBodies: Array<{ label: string; bytes: () => Buffer }> = [
  ...[
    '\n',
    '\n\n\n',
    '{}',
    'not json',
    '{"payload":{}}\n{',
    '{"payload":null}',
    '[]\n[]',
    '{"payload":{"__proto__":{"polluted":"yes"}}}',
    '\r\n{"payload":{}}\r\n',
    '{"payload":{"title":"\\u0000"}}'
  ].map((text) => ({ label: JSON.stringify(text), bytes: () => Buffer.from(text, 'utf8') })),
  { label: '2,000 lines of {}', bytes: () => Buffer.from('{}\n'.repeat(2_000)) },
  {
    label: '500 lines of {"payload":{"title":1e400}}',
    bytes: () => Buffer.from('{"payload":{"title":1e400}}\n'.repeat(500))
  },
  {
    label: "one line '['.repeat(10000) + ']'.repeat(10000)",
    bytes: () => Buffer.from('['.repeat(10_000) + ']'.repeat(10_000))
  },
  { label: 'invalid UTF-8 line', bytes: () => Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d, 0x0a]) },
  { label: 'one line of 2 MiB', bytes: () => Buffer.from(`{"payload":{"title":"${'x'.repeat(2 * 1_048_576)}"}}\n`) }
]

/** Path segments and query values as they go on the wire (percent-encoded already). */
export const wireStrings: string[] = [
  '',
  'x',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%ED%BF%BF',
  '%FF',
  '%C0%80',
  '%',
  '%2',
  '%zz',
  '%25',
  '..',
  '%2E%2E',
  '..%2F..%2Fpackage.json',
  '%2F',
  '%5C',
  '%E2%80%AE',
  '%E2%80%8B',
  '%E2%84%AA',
  'e%CC%81',
  '%C3%A9',
  '__proto__',
  'constructor',
  'prototype',
  '1e400',
  '-0',
  '9007199254740993',
  'NaN',
  'null',
  'true',
  '%5B%5D',
  '%7B%7D',
  '+',
  '%20',
  '00000000-0000-0000-0000-000000000000',
  'x'.repeat(3_000)
]

/** Changes of a real id (or any valid value) in a path or query. */
export const wireVariants: Array<{ label: string; f: (s: string) => string }> = [
  { label: 'upper-cased', f: (s) => s.toUpperCase() },
  { label: 'with %00', f: (s) => `${s}%00` },
  { label: 'with a trailing %20', f: (s) => `${s}%20` },
  { label: 'one character short', f: (s) => s.slice(0, -1) },
  { label: 'one character long', f: (s) => `${s}a` },
  {
    label: 'with its first character percent-encoded',
    f: (s) => `%${s.charCodeAt(0).toString(16).toUpperCase()}${s.slice(1)}`
  },
  { label: 'with %ED%A0%80', f: (s) => `${s}%ED%A0%80` },
  { label: 'with %2F..', f: (s) => `${s}%2F..` },
  { label: 'doubled', f: (s) => `${s}${s}` }
]

/** How a query parameter can be repeated, nested or split (qs-style brackets). */
export const queryShapes: Array<{ label: string; f: (name: string, v: string) => string }> = [
  { label: 'repeated', f: (n, v) => `${n}=${v}&${n}=${v}` },
  { label: 'as an array', f: (n, v) => `${n}[]=${v}&${n}[]=x` },
  { label: 'at index 999', f: (n, v) => `${n}[999]=${v}` },
  { label: 'nested 12 levels', f: (n, v) => `${n}${'[a]'.repeat(12)}=${v}` },
  { label: 'under __proto__', f: (n, v) => `__proto__[${n}]=${v}` },
  { label: 'with a __proto__ member', f: (n, v) => `${n}[__proto__][polluted]=${v}` },
  { label: 'under constructor.prototype', f: (n, v) => `${n}[constructor][prototype][polluted]=${v}` },
  { label: 'without =', f: (n) => n },
  { label: 'with an unclosed [', f: (n, v) => `${n}[=${v}` },
  { label: '300 times (value x)', f: (n) => Array.from({ length: 300 }, () => `${n}=x`).join('&') },
  { label: 'with 300 indexes (value x)', f: (n) => Array.from({ length: 300 }, (_x, i) => `${n}[${i}]=x`).join('&') }
]

/** Header values an HTTP/1.1 parser lets through (no CTLs): these reach the service. */
export const headerValues: Record<string, string[]> = {
  'Idempotency-Key': [
    '<fresh>',
    '<reused>',
    '',
    ' ',
    'x'.repeat(255),
    'x'.repeat(256),
    'x'.repeat(3_000),
    'caf\u00e9',
    '\ud800',
    '\u212a',
    '%00',
    'a b',
    'a,b',
    '"quoted"'
  ],
  'If-Match': [
    '"1"',
    '"2"',
    '*',
    'W/"1"',
    '"0"',
    '"-1"',
    '"1e400"',
    '"9007199254740993"',
    '"99999999999999999999"',
    '1',
    '""',
    '"1", "2"',
    '"\u00e9"',
    '"\ud800"',
    '"0x1"',
    '" 1"',
    '"1.0"',
    'x'.repeat(3_000)
  ],
  'Content-Type': [
    '<none>',
    'application/json',
    'application/merge-patch+json',
    'application/problem+json',
    'application/x-ndjson',
    'text/plain',
    '',
    'application/json; charset=utf-16',
    'application/json; charset=latin1',
    'APPLICATION/JSON',
    'application/json;;;',
    'application/jsonx',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    '*/*',
    'application/json\u00e9',
    'application/\ud800'
  ],
  Authorization: [
    '<none>',
    'Bearer',
    'Bearer ',
    'bearer <token>',
    'Bearer <token> ',
    'Bearer <token>\u00e9',
    'Bearer <token>x',
    'Basic Zm9vOmJhcg==',
    `Bearer ${'x'.repeat(3_000)}`,
    'Bearer svc_k_\ud800'
  ],
  'X-Fuzz': ['\u0080\u00ff', '\ud800', 'x'.repeat(3_000)]
}
