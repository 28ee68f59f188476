/**
 * An OpenAPI 3.1 document as a Postman Collection v2.1 that runs as a whole: one folder per
 * tag, one request per operation, bearer auth from the `token` variable, ids chained from
 * the responses that create them, a status check on
 * every request, deletes in a last "Clean up" folder. A pure function of the document, so
 * the same document always gives the same JSON (no generated ids, no clock).
 */
import { resolveLocal, type Json } from '../../core/openapi/builder.ts'

/** The parts of an OpenAPI 3.1 document the conversion reads. */
export interface OpenApiLike {
  info?: { title?: string; description?: string; version?: string }
  tags?: Array<{ name: string; description?: string }>
  security?: Array<Record<string, string[]>>
  paths?: Record<string, Json>
  components?: Json
}

export interface PostmanVariable {
  key: string
  value: string
  description?: string
  disabled?: boolean
  type?: string
}
export interface PostmanUrl {
  raw: string
  host: string[]
  path?: string[]
  query?: PostmanVariable[]
  variable?: PostmanVariable[]
}
export interface PostmanBody {
  mode: 'raw' | 'formdata' | 'urlencoded'
  raw?: string
  options?: { raw: { language: 'json' | 'text' } }
  formdata?: Array<PostmanVariable & { type: 'text' | 'file' }>
  urlencoded?: PostmanVariable[]
}
export type PostmanAuth = { type: 'noauth' } | { type: 'bearer'; bearer: PostmanVariable[] }
/** A script run before the request (`prerequest`) or on its response (`test`). */
export interface PostmanEvent {
  listen: 'prerequest' | 'test'
  script: { type: 'text/javascript'; exec: string[] }
}
export interface PostmanRequestItem {
  name: string
  request: {
    method: string
    header: PostmanVariable[]
    url: PostmanUrl
    body?: PostmanBody
    auth?: PostmanAuth
    description?: string
  }
  event?: PostmanEvent[]
}
export interface PostmanFolder {
  name: string
  description?: string
  item: PostmanRequestItem[]
}
export interface PostmanCollection {
  info: { name: string; description?: string; version?: string; schema: string }
  item: PostmanFolder[]
  auth: PostmanAuth
  variable: PostmanVariable[]
}

export const postmanSchema = 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json'
const methods = new Set(['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'])
/** Set by Postman itself (auth, body mode) or its cookie jar, so not listed as request headers. */
const managedHeaders = new Set(['authorization', 'content-type', 'accept', 'cookie'])
const untagged = 'Other'
/** The last folder: the deletes, so a run removes what it made once everything else has used it. */
const cleanUp = 'Clean up'
/**
 * Body properties that pick existing data to overwrite (a row whose `externalRef` matches a
 * live record updates it): an example's fixed value would update whatever record of the
 * tenant carries it (the bulk docs' `HR-2291` did). A request sends a fresh one on every
 * send instead, as `Idempotency-Key` gets `{{$guid}}`.
 */
const upsertKeys = new Set(['externalRef'])
const freshReference = 'postman-{{$guid}}'

/** `value` with every upsert key given a fresh reference, at any depth. */
function freshen(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(freshen)
  if (!value || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, upsertKeys.has(k) && typeof v === 'string' ? freshReference : freshen(v)])
  )
}

/** The collection's own variables; a `/{token}:x` path parameter must not shadow them. */
const reserved = new Set(['baseUrl', 'token'])

const isObject = (value: unknown): value is Json => !!value && typeof value === 'object'

/** An object with its `$ref` followed (3.1 allows siblings such as `description`: they win). */
function follow(doc: Json, value: Json): Json {
  const seen = new Set<string>()
  while (typeof value.$ref === 'string' && !seen.has(value.$ref)) {
    seen.add(value.$ref)
    const { $ref, ...siblings } = value
    const target = resolveLocal(doc, $ref)
    if (!isObject(target)) return siblings
    value = { ...target, ...siblings }
  }
  return value
}

/** `follow` of an object; anything else (absent, a boolean schema) has no members to read: undefined. */
const deref = (doc: Json, value: unknown): Json | undefined => (isObject(value) ? follow(doc, value) : undefined)

const scalarPlaceholders: Record<string, unknown> = {
  string: '<string>',
  integer: 0,
  number: 0,
  boolean: true,
  null: null
}
const formatPlaceholders: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  uuid: '00000000-0000-0000-0000-000000000000',
  email: 'someone@example.com',
  uri: 'https://example.com/'
}

/**
 * A body that shows the shape: the schema's own example, default, const or first enum
 * value, else its required properties filled the same way. `$ref`s on the way are
 * followed; one already being expanded (a cycle) gives `{}`.
 */
export function skeleton(doc: Json, schema: unknown, expanding: Set<string> = new Set()): unknown {
  if (!isObject(schema)) return {}
  const ref: string | undefined = typeof schema.$ref === 'string' ? schema.$ref : undefined
  if (ref && expanding.has(ref)) return {}
  const inner = ref ? new Set([...expanding, ref]) : expanding
  const s = follow(doc, schema)
  if (s.example !== undefined) return s.example
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0]
  if (s.default !== undefined) return s.default
  if (s.const !== undefined) return s.const
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0]
  if (Array.isArray(s.allOf)) {
    // Objects merge (with the schema's own properties beside allOf); anything else: the first part.
    const { allOf, ...own } = s
    const parts = [
      ...allOf.map((p: unknown) => skeleton(doc, p, inner)),
      ...(own.properties ? [skeleton(doc, own, inner)] : [])
    ]
    return parts.every((p) => p && typeof p === 'object' && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0]
  }
  // The first choice that is not null: a usable value rather than the "nothing" branch.
  const choices = s.oneOf ?? s.anyOf
  if (Array.isArray(choices) && choices.length)
    return skeleton(doc, choices.find((c: unknown) => deref(doc, c)?.type !== 'null') ?? choices[0], inner)
  const type = Array.isArray(s.type)
    ? (s.type.find((t: string) => t !== 'null') ?? s.type[0])
    : (s.type ?? (s.properties ? 'object' : s.items ? 'array' : undefined))
  if (type === 'object') {
    const out: Json = {}
    for (const name of Array.isArray(s.required) ? s.required : [])
      out[name] = skeleton(doc, s.properties?.[name] ?? {}, inner)
    return out
  }
  if (type === 'array') return s.items ? [skeleton(doc, s.items, inner)] : []
  if (type === 'string' && formatPlaceholders[s.format]) return formatPlaceholders[s.format]
  return type && type in scalarPlaceholders ? scalarPlaceholders[type] : {}
}

/** A parameter's example: its own, its first named example that has a value, else from its schema. */
function exampleOf(doc: Json, p: Json): unknown {
  if (p.example !== undefined) return p.example
  // A named example without a value ("No filter") stands for leaving the parameter out.
  for (const named of Object.values<Json>(p.examples ?? {})) {
    const value = deref(doc, named)?.value
    if (value !== undefined) return value
  }
  const s = deref(doc, p.schema)
  if (!s) return undefined
  return s.example ?? s.examples?.[0] ?? s.default ?? s.const ?? s.enum?.[0]
}

const text = (v: unknown): string =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)
const ref = (key: string) => `{{${key}}}`
const literals = (path: string) => path.split('/').filter((s) => s && !s.includes('{'))

/** Path-level parameters, overridden by the operation's own of the same name and location. */
function parametersOf(doc: Json, pathItem: Json, op: Json): Json[] {
  const byKey = new Map<string, Json>()
  for (const raw of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])]) {
    const p = deref(doc, raw)
    if (p?.name && p.in) byKey.set(`${p.in}:${p.name}`, p)
  }
  return [...byKey.values()]
}

interface Op {
  path: string
  method: string
  pathItem: Json
  op: Json
  /** `POST /api/v1/records` */
  key: string
}

/** A POST that creates what `P/{param}` addresses: its response's `param` goes in `key`. */
interface Creator {
  key: string
  param: string
  /** The body property or query parameter that takes the same id elsewhere: `recordId`. */
  alias: string
  by: Op
}
/** A signed URL in a response (`upload`: `{ method, url, headers }`) and the operation it is for. */
interface Link {
  by: Op
  property: string
  /** `attachments.upload`: `.url` and `.headers` are stored. */
  key: string
  /** Where the declared size is stored, for a request that must send that many bytes. */
  sizeKey?: string
}

/**
 * How the requests hand values on, read off the document:
 * - a POST to a path `P` with a path `P/{param}` beside it, whose success response has a
 *   `param` property, creates a resource: its test script stores that in
 *   `<last segment of P>.<param>` (`records.id`), which every `{param}` right after `P/`
 *   uses, and so does every body property and query parameter named `<singular>Id`
 *   (`recordId`);
 * - a success response that always carries a signed link (an object with a `const` method
 *   and a `url`, such as an attachment's `upload`) is followed by the operation that takes no
 *   credential, has that method and needs a query parameter no example can give (the
 *   signature): it is sent to the stored URL with the stored headers.
 */
interface Chain {
  ops: Op[]
  creators: Map<string, Creator>
  aliases: Map<string, string>
  links: Map<string, Link>
}

/** The status a successful call answers (the lowest 2xx documented) and its JSON schema. */
function successOf(doc: Json, op: Json): { status: number; schema?: Json } | undefined {
  const codes = Object.keys(op.responses ?? {}).filter((s) => /^\d{3}$/.test(s))
  const preferred = codes.find((s) => Number(s) === op['x-default-status'])
  const status =
    preferred ?? codes.filter((s) => s.startsWith('2')).sort()[0] ?? codes.filter((s) => Number(s) < 400).sort()[0]
  if (!status) return undefined
  const content: Json = deref(doc, op.responses[status])?.content ?? {}
  const type = Object.keys(content).find(isJson)
  return { status: Number(status), schema: type ? content[type].schema : undefined }
}

/** An object schema's properties through `$ref` and `allOf` (and any `oneOf`/`anyOf` branch unless `always`), and which are always there. */
function shapeOf(
  doc: Json,
  schema: unknown,
  always: boolean,
  depth = 0
): { props: Record<string, Json>; required: Set<string> } {
  const props: Record<string, Json> = {}
  const required = new Set<string>()
  const s = deref(doc, schema)
  if (!s || typeof s !== 'object' || depth > 8) return { props, required }
  const parts: Array<[unknown, boolean]> = [
    ...(s.allOf ?? []).map((p: unknown) => [p, true]),
    ...(always ? [] : [...(s.oneOf ?? []), ...(s.anyOf ?? [])].map((p: unknown) => [p, false]))
  ]
  for (const [part, all] of parts) {
    const inner = shapeOf(doc, part, always, depth + 1)
    Object.assign(props, inner.props)
    if (all) inner.required.forEach((r) => required.add(r))
  }
  Object.assign(props, s.properties ?? {})
  for (const r of s.required ?? []) required.add(r)
  return { props, required }
}

function chainOf(doc: Json, ops: Op[]): Chain {
  const creators = new Map<string, Creator>()
  const aliases = new Map<string, string>()
  const links = new Map<string, Link>()
  const paths = Object.keys(doc.paths ?? {})
  for (const o of ops) {
    if (o.method !== 'post' || o.path.includes('{')) continue
    const param = paths
      .map((p) => (p.startsWith(`${o.path}/{`) ? /^\{([^{}]+)\}/.exec(p.slice(o.path.length + 1))?.[1] : undefined))
      .find(Boolean)
    const schema = successOf(doc, o.op)?.schema
    if (!param || !schema || !(param in shapeOf(doc, schema, false).props)) continue
    const segment = literals(o.path).at(-1)!
    const key = `${segment}.${param}`
    const alias = `${segment.replace(/s$/, '')}${param[0].toUpperCase()}${param.slice(1)}`
    creators.set(o.path, { key, param, alias, by: o })
    aliases.set(alias, key)
  }
  const signed = (t: Op) =>
    Array.isArray(t.op.security) &&
    t.op.security.length === 0 &&
    parametersOf(doc, t.pathItem, t.op).some((p) => p.in === 'query' && p.required && exampleOf(doc, p) === undefined)
  for (const o of ops) {
    const schema = successOf(doc, o.op)?.schema
    if (!schema) continue
    const { props, required } = shapeOf(doc, schema, true)
    for (const [property, raw] of Object.entries(props)) {
      const link = deref(doc, raw)
      const method = deref(doc, link?.properties?.method)?.const
      if (!required.has(property) || typeof method !== 'string' || !link?.properties?.url) continue
      const target = ops.find((t) => t.method === method.toLowerCase() && signed(t))
      if (!target || links.has(target.key)) continue
      const resource = literals(o.path).at(-1)
      links.set(target.key, {
        by: o,
        property,
        key: `${resource}.${property}`,
        ...('size' in props && target.op.requestBody ? { sizeKey: `${resource}.size` } : {})
      })
    }
  }
  return { ops, creators, aliases, links }
}

/** Body values named like a chained id (`recordId`) become its variable. */
function chainValues(value: unknown, chain: Chain, uses: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => chainValues(v, chain, uses))
  if (!value || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      const key = typeof v === 'string' ? chain.aliases.get(k) : undefined
      if (!key) return [k, chainValues(v, chain, uses)]
      uses.add(key)
      return [k, ref(key)]
    })
  )
}

/**
 * One query entry per value: arrays repeat the key, `deepObject` objects become `name[key]`.
 * A parameter that takes a chained id (`recordId`) is sent with it, even when optional, and so is one the document
 * marks `x-postman-enabled`.
 */
function queryEntries(doc: Json, p: Json, chain: Chain, uses: Set<string>): PostmanVariable[] {
  const chained = chain.aliases.get(p.name)
  if (chained) uses.add(chained)
  const example = chained ? ref(chained) : exampleOf(doc, p)
  // An optional parameter marked `x-postman-enabled` is sent too (a list's moduleKey: optional only for a lookup by
  // number across modules); the others are there to switch on.
  const disabled = !p.required && !chained && p['x-postman-enabled'] !== true
  const entry = (key: string, value: unknown): PostmanVariable => ({
    key,
    value: text(value),
    ...(p.description ? { description: p.description } : {}),
    ...(disabled ? { disabled } : {})
  })
  if (p.style === 'deepObject') {
    const pairs =
      example && typeof example === 'object' && !Array.isArray(example) && Object.keys(example).length
        ? Object.entries(example)
        : [['field', '']]
    return pairs.map(([k, v]) => entry(`${p.name}[${k}]`, v))
  }
  if (Array.isArray(example) && p.explode !== false) return example.map((v) => entry(p.name, v))
  return [entry(p.name, Array.isArray(example) ? example.join(',') : example)]
}

const isJson = (type: string) => type === 'application/json' || /^application\/[^;]*\+json$/.test(type)

/**
 * The body of one media type: JSON (also `+json`), then NDJSON, else the first listed.
 * JSON and NDJSON are raw text; forms are Postman form fields; anything else raw.
 */
function bodyOf(
  doc: Json,
  op: Json,
  chain: Chain,
  uses: Set<string>
): { body: PostmanBody; contentType: string } | undefined {
  const requestBody = deref(doc, op.requestBody)
  const content: Json | undefined = requestBody?.content
  if (!content || !Object.keys(content).length) return undefined
  const types = Object.keys(content)
  const contentType =
    types.find((t) => t === 'application/json') ??
    types.find(isJson) ??
    types.find((t) => t === 'application/x-ndjson') ??
    types[0]
  const media = content[contentType] ?? {}
  const named = media.examples && Object.values(media.examples)[0]
  const given = media.example !== undefined ? media.example : named ? deref(doc, named)?.value : undefined
  const example = freshen(chainValues(given, chain, uses))
  if (isJson(contentType)) {
    const value = example !== undefined ? example : freshen(skeleton(doc, media.schema))
    return {
      contentType,
      body: { mode: 'raw', raw: JSON.stringify(value, null, 2), options: { raw: { language: 'json' } } }
    }
  }
  if (contentType === 'application/x-ndjson') {
    // One JSON value per line: an array example is the lines; a string is sent as written.
    const lines =
      example === undefined
        ? [freshen(skeleton(doc, deref(doc, media.schema)?.items ?? media.schema))]
        : Array.isArray(example)
          ? example
          : [example]
    return {
      contentType,
      body: {
        mode: 'raw',
        raw: lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n',
        options: { raw: { language: 'text' } }
      }
    }
  }
  if (contentType === 'multipart/form-data' || contentType === 'application/x-www-form-urlencoded') {
    const schema = deref(doc, media.schema) ?? {}
    const required = new Set<string>(schema.required ?? [])
    const fields = Object.entries<Json>(schema.properties ?? {}).map(([key, raw]) => {
      const s = deref(doc, raw) ?? {}
      const file = s.format === 'binary' || s.contentMediaType !== undefined || s.contentEncoding !== undefined
      const value =
        example && typeof example === 'object' && key in example
          ? (example as Json)[key]
          : file
            ? undefined
            : skeleton(doc, raw)
      return {
        key,
        value: text(value),
        file,
        ...(s.description ? { description: s.description } : {}),
        ...(required.has(key) ? {} : { disabled: true })
      }
    })
    if (contentType === 'application/x-www-form-urlencoded')
      return { contentType, body: { mode: 'urlencoded', urlencoded: fields.map(({ file, ...f }) => f) } }
    return {
      contentType,
      body: {
        mode: 'formdata',
        formdata: fields.map(({ file, ...f }) => ({ ...f, type: file ? ('file' as const) : ('text' as const) }))
      }
    }
  }
  return { contentType, body: { mode: 'raw', raw: text(example), options: { raw: { language: 'text' } } } }
}

/**
 * The request URL. A segment that is exactly `{name}` becomes a Postman path variable
 * `:name`, with its description and example. A parameter with literal text beside it
 * (`{id}:transition`, a Google-style custom method) cannot: Postman reads a path variable
 * up to the next `/`, so `:id:transition` would be one variable named `id:transition`, left
 * empty, and the request would go to `/records/`. Such a parameter becomes a collection
 * variable (returned in `shared`, holding the example), as Postman's own openapi-to-postman
 * converter does, so the request goes to `/api/v1/records/<id>:transition`.
 *
 * Collection variables are shared by every request, and `{id}` of
 * `/records/{id}:transition` is not `{id}` of `/attachments/{id}:complete`; so the
 * variable is named after the nearest literal segment before it: `{{records.id}}`,
 * `{{attachments.id}}`. A name that does not depend on which other paths the document has
 * (a tenant's modules add some) keeps a value someone set across re-imports. An id a
 * request creates is that same variable, so a `:id` path variable holds `{{records.id}}`.
 */
function urlOf(
  path: string,
  params: Json[],
  query: PostmanVariable[],
  shared: Map<string, PostmanVariable>,
  doc: Json,
  chain: Chain,
  uses: Set<string>
): PostmanUrl {
  const pathParams = new Map(params.filter((p) => p.in === 'path').map((p) => [p.name as string, p]))
  const variable: PostmanVariable[] = []
  const parts = path.split('/').filter(Boolean)
  const declare = (key: string, p: Json | undefined, creator?: Creator) => {
    if (shared.has(key)) return
    const note = creator
      ? `Set by “${nameOf(creator.by)}” when the collection runs (until then: the documented example).`
      : undefined
    const description = [p?.description, note].filter(Boolean).join(' ')
    shared.set(key, { key, value: text(p ? exampleOf(doc, p) : ''), ...(description ? { description } : {}) })
  }
  const segments = parts.map((segment, i) => {
    const creator = chain.creators.get(`/${parts.slice(0, i).join('/')}`)
    const chained = (name: string) => (creator?.param === name ? creator : undefined)
    const whole = /^\{([^{}]+)\}$/.exec(segment)
    if (whole) {
      const p = pathParams.get(whole[1])
      const c = chained(whole[1])
      if (c) {
        declare(c.key, p, c)
        uses.add(c.key)
      }
      variable.push({
        key: whole[1],
        value: c ? ref(c.key) : text(p ? exampleOf(doc, p) : ''),
        ...(p?.description ? { description: p.description } : {})
      })
      return `:${whole[1]}`
    }
    const owner = parts
      .slice(0, i)
      .reverse()
      .find((s) => !s.includes('{'))
    return segment.replace(/\{([^{}]+)\}/g, (_, name: string) => {
      const c = chained(name)
      const key = c ? c.key : owner ? `${owner}.${name}` : reserved.has(name) ? `${name}Param` : name
      if (c) uses.add(key)
      declare(key, pathParams.get(name), c)
      return ref(key)
    })
  })
  const enabled = query.filter((q) => !q.disabled)
  const raw = `{{baseUrl}}/${segments.join('/')}${enabled.length ? `?${enabled.map((q) => `${q.key}=${q.value}`).join('&')}` : ''}`
  return {
    raw,
    host: ['{{baseUrl}}'],
    path: segments,
    ...(query.length ? { query } : {}),
    ...(variable.length ? { variable } : {})
  }
}

const nameOf = (o: Op) => o.op.summary || o.op.operationId || o.key
const writes = (o: Op) => o.method !== 'get' && o.method !== 'head' && o.method !== 'options'
const script = (listen: PostmanEvent['listen'], exec: string[]): PostmanEvent => ({
  listen,
  script: { type: 'text/javascript', exec }
})
/** `.id`, or `["odd-name"]`: a property of the response in a script. */
const member = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`)
const set = (key: string, expression: string) => `pm.collectionVariables.set(${JSON.stringify(key)}, ${expression});`

interface Built {
  o: Op
  item: PostmanRequestItem
  /** Variables it needs from earlier responses, and those it stores. */
  uses: Set<string>
  sets: Set<string>
}

/**
 * One request, with a test script that checks the documented success status and stores what
 * later requests use: the id it created, or a signed link. A request to a signed link gets a
 * pre-request script that adds the link's headers (and sends as many bytes as were declared).
 */
function requestOf(doc: Json, o: Op, shared: Map<string, PostmanVariable>, chain: Chain): Built {
  const { path, pathItem, method, op } = o
  const uses = new Set<string>()
  const sets = new Set<string>()
  const params = parametersOf(doc, pathItem, op)
  const link = chain.links.get(o.key)
  const query = link ? [] : params.filter((p) => p.in === 'query').flatMap((p) => queryEntries(doc, p, chain, uses))
  const header: PostmanVariable[] = []
  const body = bodyOf(doc, op, chain, uses)
  // Raw bodies name their type (Postman would send NDJSON as text/plain); form bodies get
  // theirs, with the multipart boundary, from Postman. `*/*` is no type to send.
  if (body?.body.mode === 'raw' && !body.contentType.includes('*'))
    header.push({ key: 'Content-Type', value: body.contentType })
  for (const p of params.filter((p) => p.in === 'header' && !managedHeaders.has(String(p.name).toLowerCase()))) {
    // A fresh key on every send, so enabling it never replays an earlier request by mistake.
    const value = String(p.name).toLowerCase() === 'idempotency-key' ? '{{$guid}}' : text(exampleOf(doc, p))
    header.push({
      key: p.name,
      value,
      ...(p.description ? { description: p.description } : {}),
      ...(p.required ? {} : { disabled: true })
    })
  }
  const success = successOf(doc, op)
  const tests = success
    ? [
        `pm.test(${JSON.stringify(`answers ${success.status}`)}, function () {`,
        `  pm.response.to.have.status(${success.status});`,
        '});'
      ]
    : []
  const creator = method === 'post' ? chain.creators.get(path) : undefined
  if (creator) {
    tests.push(set(creator.key, `pm.response.json()${member(creator.param)}`))
    sets.add(creator.key)
  }
  for (const l of chain.links.values()) {
    if (l.by !== o) continue
    tests.push(
      set(`${l.key}.url`, `pm.response.json()${member(l.property)}.url`),
      set(`${l.key}.headers`, `JSON.stringify(pm.response.json()${member(l.property)}.headers || {})`)
    )
    sets.add(`${l.key}.url`).add(`${l.key}.headers`)
    if (l.sizeKey) {
      tests.push(set(l.sizeKey, 'String(pm.response.json().size)'))
      sets.add(l.sizeKey)
    }
  }
  const events = [script('test', tests)]
  let url: PostmanUrl
  if (link) {
    url = { raw: ref(`${link.key}.url`), host: [ref(`${link.key}.url`)] }
    uses.add(`${link.key}.url`).add(`${link.key}.headers`)
    const pre = [
      `var headers = JSON.parse(pm.collectionVariables.get(${JSON.stringify(`${link.key}.headers`)}) || '{}');`,
      'Object.keys(headers).forEach(function (key) { pm.request.headers.upsert({ key: key, value: headers[key] }); });'
    ]
    if (link.sizeKey) {
      uses.add(link.sizeKey)
      pre.push(
        `pm.request.body.update('0'.repeat(Number(pm.collectionVariables.get(${JSON.stringify(link.sizeKey)}))));`
      )
    }
    events.unshift(script('prerequest', pre))
  } else url = urlOf(path, params, query, shared, doc, chain, uses)
  const security = op.security ?? doc.security
  const notes = [
    link
      ? `Sent to the \`${link.property}.url\` that “${nameOf(link.by)}” answered (\`{{${link.key}.url}}\`), with its \`headers\`${link.sizeKey ? ', and a stand-in file of as many bytes as were declared' : ''}.`
      : '',
    writes(o) ? writeNote(doc, o, chain) : ''
  ].filter(Boolean)
  const description = [op.description, ...notes].filter(Boolean).join('\n\n')
  return {
    o,
    uses,
    sets,
    item: {
      name: nameOf(o),
      request: {
        method: method.toUpperCase(),
        header,
        url,
        ...(body ? { body: body.body } : {}),
        // `security: []` means no credential; anything else inherits the collection's bearer token.
        ...(Array.isArray(security) && security.length === 0 ? { auth: { type: 'noauth' as const } } : {}),
        ...(description ? { description } : {})
      },
      event: events
    }
  }
}

/** The deletes that remove what `creator` made: the DELETE of `P/{param}`. */
const undoing = (creator: Creator, ops: Op[]) =>
  ops.find((o) => o.method === 'delete' && o.path === `${creator.by.path}/{${creator.param}}`)
/** The creator's response carries a credential: `token`. */
const mints = (doc: Json, creator: Creator) =>
  'token' in shapeOf(doc, successOf(doc, creator.by.op)?.schema, false).props

function writeNote(doc: Json, o: Op, chain: Chain): string {
  const creator = o.method === 'post' ? chain.creators.get(o.path) : undefined
  if (!creator)
    return o.method === 'delete' && o.path.includes('{')
      ? `**Writes to your tenant.** In the “${cleanUp}” folder, so a run of the collection does it last.`
      : '**Writes to your tenant** when sent.'
  const undo = undoing(creator, chain.ops)
  const what = mints(doc, creator) ? 'mints a live credential (the response’s `token`)' : 'creates one'
  return `**Writes to your tenant**: it ${what} and keeps its \`${creator.param}\` in \`{{${creator.key}}}\` for the requests after it.${undo ? ` “${nameOf(undo)}” (in “${cleanUp}”) ${undo.path.startsWith(creator.by.path) && mints(doc, creator) ? 'revokes' : 'deletes'} it at the end of a run.` : ''}`
}

/**
 * A run order: what creates (phase 0), then requests to the links they answered (1), then
 * the rest (2), in document order within a phase; and never before a request that stores a
 * variable it uses.
 */
function runOrder(built: Built[], chain: Chain): Built[] {
  const creating = new Set([...chain.creators.values()].map((c) => c.by))
  const phase = (b: Built) =>
    creating.has(b.o) ? 0 : chain.links.get(b.o.key) && creating.has(chain.links.get(b.o.key)!.by) ? 1 : 2
  const pending = built
    .map((b, i) => ({ b, i }))
    .sort((x, y) => phase(x.b) - phase(y.b) || x.i - y.i)
    .map((x) => x.b)
  const here = new Set(built.flatMap((b) => [...b.sets]))
  const done = new Set<string>()
  const out: Built[] = []
  while (pending.length) {
    const i = Math.max(
      0,
      pending.findIndex((b) => [...b.uses].every((k) => done.has(k) || !here.has(k)))
    )
    const [next] = pending.splice(i, 1)
    next.sets.forEach((k) => done.add(k))
    out.push(next)
  }
  return out
}

/**
 * A Postman Collection v2.1 of every operation in `doc`, sent to `{{baseUrl}}` with
 * `{{token}}`, that runs top to bottom: ids chained, deletes last, every status checked.
 */
export function toPostmanCollection(doc: OpenApiLike, options: { baseUrl: string; name?: string }): PostmanCollection {
  const d = doc as Json
  const ops: Array<Op & { tag?: string }> = []
  for (const [path, rawItem] of Object.entries(doc.paths ?? {})) {
    const pathItem = deref(d, rawItem) ?? {}
    for (const [method, op] of Object.entries<Json>(pathItem)) {
      if (!methods.has(method) || !op || typeof op !== 'object') continue
      // An operation with several tags goes in the first one's folder only, not once per tag.
      ops.push({ path, method, pathItem, op, key: `${method.toUpperCase()} ${path}`, tag: op.tags?.[0] })
    }
  }
  const chain = chainOf(d, ops)
  const shared = new Map<string, PostmanVariable>()
  const built = ops.map((o) => requestOf(d, o, shared, chain))
  const isCleanUp = (b: Built) => b.o.method === 'delete' && b.uses.size > 0
  const groups = new Map<string | undefined, { name: string; description?: string; built: Built[] }>()
  for (const tag of doc.tags ?? [])
    groups.set(tag.name, { name: tag.name, ...(tag.description ? { description: tag.description } : {}), built: [] })
  const others: { name: string; description?: string; built: Built[] } = { name: untagged, built: [] }
  const last = {
    name: cleanUp,
    description: 'Deletes what the requests above created. Run last: the requests before it use what these remove.',
    built: [] as Built[]
  }
  for (const b of built) {
    const tag = (b.o as Op & { tag?: string }).tag
    if (isCleanUp(b)) last.built.push(b)
    else if (tag === undefined) others.built.push(b)
    else {
      if (!groups.has(tag)) groups.set(tag, { name: tag, built: [] })
      groups.get(tag)!.built.push(b)
    }
  }
  const folders = [...groups.values(), others, last].filter((g) => g.built.length)
  const item: PostmanFolder[] = folders.map((g) => {
    const ordered = runOrder(g.built, chain)
    const writing = ordered.filter((b) => writes(b.o)).map((b) => `“${b.item.name}”`)
    const note = writing.length && g !== last ? `Running this folder writes to your tenant: ${writing.join(', ')}.` : ''
    const description = [g.description, note].filter(Boolean).join('\n\n')
    return { name: g.name, ...(description ? { description } : {}), item: ordered.map((b) => b.item) }
  })
  for (const l of chain.links.values()) {
    shared.set(`${l.key}.url`, {
      key: `${l.key}.url`,
      value: '',
      description: `The signed \`${l.property}.url\` that “${nameOf(l.by)}” answered; set when the collection runs.`
    })
    shared.set(`${l.key}.headers`, {
      key: `${l.key}.headers`,
      value: '{}',
      description: `Its \`headers\` (JSON); set when the collection runs.`
    })
    if (l.sizeKey)
      shared.set(l.sizeKey, {
        key: l.sizeKey,
        value: '',
        description: `The size “${nameOf(l.by)}” declared, in bytes; set when the collection runs.`
      })
  }
  return {
    info: {
      name: options.name ?? doc.info?.title ?? 'API',
      description: [runNote(d, chain, item), doc.info?.description].filter(Boolean).join('\n\n'),
      ...(doc.info?.version ? { version: doc.info.version } : {}),
      schema: postmanSchema
    },
    item,
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] },
    variable: [
      { key: 'baseUrl', value: options.baseUrl.replace(/\/+$/, ''), type: 'string' },
      {
        key: 'token',
        value: '',
        type: 'string',
        description: 'A bearer token: an API key, personal access token or service account token.'
      },
      ...[...shared.values()].map((v) => ({ ...v, type: 'string' }))
    ]
  }
}

/** What running the whole collection does to the tenant, said before anything else. */
function runNote(doc: Json, chain: Chain, folders: PostmanFolder[]): string {
  const writing = folders.flatMap((f) =>
    f.item.filter((i) => !['GET', 'HEAD', 'OPTIONS'].includes(i.request.method)).map((i) => `“${i.name}”`)
  )
  if (!writing.length) return ''
  const creators = [...chain.creators.values()]
  const minting = creators.filter((c) => mints(doc, c))
  const credential = minting.map((c) => {
    const undo = undoing(c, chain.ops)
    return `It mints a live credential (“${nameOf(c.by)}”)${undo ? `; “${nameOf(undo)}” in “${cleanUp}” revokes it, so none is left behind when the run completes` : ', which stays valid until you revoke it'}.`
  })
  const fresh = folders.some((f) =>
    f.item.some((i) => i.request.body?.mode === 'raw' && i.request.body.raw?.includes(freshReference))
  )
  return [
    `**Running this collection writes to the tenant of your \`token\`.** In order, it sends ${writing.join(', ')}.`,
    ...credential,
    fresh
      ? `What it creates carries a fresh \`externalRef\` (\`${freshReference}\`, new on every send), so no request updates a record of yours by its reference; an \`Idempotency-Key\` header, once enabled, is a fresh \`{{$guid}}\` on every send too.`
      : '',
    creators.length
      ? `Each create keeps the new id in a collection variable (${creators.map((c) => `\`{{${c.key}}}\``).join(', ')}) that the requests after it use, so the collection runs top to bottom as it is; every request checks its documented status. The “${cleanUp}” folder runs last.`
      : ''
  ]
    .filter(Boolean)
    .join(' ')
}
