/**
 * An OpenAPI 3.1 document as a Postman Collection v2.1: one folder per tag, one request per
 * operation, bearer auth from the `token` variable. A pure function of the document, so the
 * same document always gives the same JSON (no generated ids, no clock).
 */
import { resolveLocal } from './builder.ts'

type Json = Record<string, any>

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
  path: string[]
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
export interface PostmanRequestItem {
  name: string
  request: { method: string; header: PostmanVariable[]; url: PostmanUrl; body?: PostmanBody; auth?: PostmanAuth; description?: string }
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
/** The collection's own variables; a `/{token}:x` path parameter must not shadow them. */
const reserved = new Set(['baseUrl', 'token'])

/** An object with its `$ref` followed (3.1 allows siblings such as `description`: they win). */
function deref(doc: Json, value: any): any {
  const seen = new Set<string>()
  while (value && typeof value === 'object' && typeof value.$ref === 'string' && !seen.has(value.$ref)) {
    seen.add(value.$ref)
    const { $ref, ...siblings } = value
    const target = resolveLocal(doc, $ref)
    if (!target || typeof target !== 'object') return siblings
    value = { ...(target as Json), ...siblings }
  }
  return value
}

const scalarPlaceholders: Record<string, unknown> = { string: '<string>', integer: 0, number: 0, boolean: true, null: null }
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
export function skeleton(doc: Json, schema: any, expanding: Set<string> = new Set()): unknown {
  if (!schema || typeof schema !== 'object') return {}
  const ref: string | undefined = typeof schema.$ref === 'string' ? schema.$ref : undefined
  if (ref && expanding.has(ref)) return {}
  const inner = ref ? new Set([...expanding, ref]) : expanding
  const s = deref(doc, schema)
  if (s.example !== undefined) return s.example
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0]
  if (s.default !== undefined) return s.default
  if (s.const !== undefined) return s.const
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0]
  if (Array.isArray(s.allOf)) {
    // Objects merge (with the schema's own properties beside allOf); anything else: the first part.
    const { allOf, ...own } = s
    const parts = [...allOf.map((p: unknown) => skeleton(doc, p, inner)), ...(own.properties ? [skeleton(doc, own, inner)] : [])]
    return parts.every((p) => p && typeof p === 'object' && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0]
  }
  // The first choice that is not null: a usable value rather than the "nothing" branch.
  const choices = s.oneOf ?? s.anyOf
  if (Array.isArray(choices) && choices.length) return skeleton(doc, choices.find((c: any) => deref(doc, c)?.type !== 'null') ?? choices[0], inner)
  const type = Array.isArray(s.type) ? (s.type.find((t: string) => t !== 'null') ?? s.type[0]) : (s.type ?? (s.properties ? 'object' : s.items ? 'array' : undefined))
  if (type === 'object') {
    const out: Json = {}
    for (const name of Array.isArray(s.required) ? s.required : []) out[name] = skeleton(doc, s.properties?.[name] ?? {}, inner)
    return out
  }
  if (type === 'array') return s.items ? [skeleton(doc, s.items, inner)] : []
  if (type === 'string' && formatPlaceholders[s.format]) return formatPlaceholders[s.format]
  return type && type in scalarPlaceholders ? scalarPlaceholders[type] : {}
}

/** A parameter's example: its own, its first named example, else from its schema. */
function exampleOf(doc: Json, p: Json): unknown {
  if (p.example !== undefined) return p.example
  const named = p.examples && Object.values(p.examples)[0]
  if (named) return deref(doc, named).value
  const s = deref(doc, p.schema)
  if (!s) return undefined
  return s.example ?? s.examples?.[0] ?? s.default ?? s.const ?? s.enum?.[0]
}

const text = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v))

/** Path-level parameters, overridden by the operation's own of the same name and location. */
function parametersOf(doc: Json, pathItem: Json, op: Json): Json[] {
  const byKey = new Map<string, Json>()
  for (const raw of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])]) {
    const p = deref(doc, raw)
    if (p?.name && p.in) byKey.set(`${p.in}:${p.name}`, p)
  }
  return [...byKey.values()]
}

/** One query entry per value: arrays repeat the key, `deepObject` objects become `name[key]`. */
function queryEntries(doc: Json, p: Json): PostmanVariable[] {
  const example = exampleOf(doc, p)
  const disabled = !p.required
  const entry = (key: string, value: unknown): PostmanVariable => ({ key, value: text(value), ...(p.description ? { description: p.description } : {}), ...(disabled ? { disabled } : {}) })
  if (p.style === 'deepObject') {
    const pairs = example && typeof example === 'object' && !Array.isArray(example) ? Object.entries(example) : [['field', '']]
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
function bodyOf(doc: Json, op: Json): { body: PostmanBody; contentType: string } | undefined {
  const requestBody = deref(doc, op.requestBody)
  const content: Json | undefined = requestBody?.content
  if (!content || !Object.keys(content).length) return undefined
  const types = Object.keys(content)
  const contentType = types.find((t) => t === 'application/json') ?? types.find(isJson) ?? types.find((t) => t === 'application/x-ndjson') ?? types[0]
  const media = content[contentType] ?? {}
  const named = media.examples && Object.values(media.examples)[0]
  const example = media.example !== undefined ? media.example : named ? deref(doc, named).value : undefined
  if (isJson(contentType)) {
    const value = example !== undefined ? example : skeleton(doc, media.schema)
    return { contentType, body: { mode: 'raw', raw: JSON.stringify(value, null, 2), options: { raw: { language: 'json' } } } }
  }
  if (contentType === 'application/x-ndjson') {
    // One JSON value per line: an array example is the lines; a string is sent as written.
    const lines = example === undefined ? [skeleton(doc, deref(doc, media.schema)?.items ?? media.schema)] : Array.isArray(example) ? example : [example]
    return { contentType, body: { mode: 'raw', raw: lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n', options: { raw: { language: 'text' } } } }
  }
  if (contentType === 'multipart/form-data' || contentType === 'application/x-www-form-urlencoded') {
    const schema = deref(doc, media.schema) ?? {}
    const required = new Set<string>(schema.required ?? [])
    const fields = Object.entries<Json>(schema.properties ?? {}).map(([key, raw]) => {
      const s = deref(doc, raw) ?? {}
      const file = s.format === 'binary' || s.contentMediaType !== undefined || s.contentEncoding !== undefined
      const value = example && typeof example === 'object' && key in example ? (example as Json)[key] : file ? undefined : skeleton(doc, raw)
      return { key, value: text(value), file, ...(s.description ? { description: s.description } : {}), ...(required.has(key) ? {} : { disabled: true }) }
    })
    if (contentType === 'application/x-www-form-urlencoded') return { contentType, body: { mode: 'urlencoded', urlencoded: fields.map(({ file, ...f }) => f) } }
    return { contentType, body: { mode: 'formdata', formdata: fields.map(({ file, ...f }) => ({ ...f, type: file ? ('file' as const) : ('text' as const) })) } }
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
 * (a tenant's modules add some) keeps a value someone set across re-imports.
 */
function urlOf(path: string, params: Json[], query: PostmanVariable[], shared: Map<string, PostmanVariable>, doc: Json): PostmanUrl {
  const pathParams = new Map(params.filter((p) => p.in === 'path').map((p) => [p.name as string, p]))
  const variable: PostmanVariable[] = []
  const parts = path.split('/').filter(Boolean)
  const segments = parts.map((segment, i) => {
    const whole = /^\{([^{}]+)\}$/.exec(segment)
    if (whole) {
      const p = pathParams.get(whole[1])
      variable.push({ key: whole[1], value: text(p ? exampleOf(doc, p) : ''), ...(p?.description ? { description: p.description } : {}) })
      return `:${whole[1]}`
    }
    const owner = parts
      .slice(0, i)
      .reverse()
      .find((s) => !s.includes('{'))
    return segment.replace(/\{([^{}]+)\}/g, (_, name: string) => {
      const p = pathParams.get(name)
      const key = owner ? `${owner}.${name}` : reserved.has(name) ? `${name}Param` : name
      if (!shared.has(key)) shared.set(key, { key, value: text(p ? exampleOf(doc, p) : ''), ...(p?.description ? { description: p.description } : {}) })
      return `{{${key}}}`
    })
  })
  const enabled = query.filter((q) => !q.disabled)
  const raw = `{{baseUrl}}/${segments.join('/')}${enabled.length ? `?${enabled.map((q) => `${q.key}=${q.value}`).join('&')}` : ''}`
  return { raw, host: ['{{baseUrl}}'], path: segments, ...(query.length ? { query } : {}), ...(variable.length ? { variable } : {}) }
}

function requestOf(doc: Json, path: string, pathItem: Json, method: string, op: Json, shared: Map<string, PostmanVariable>): PostmanRequestItem {
  const params = parametersOf(doc, pathItem, op)
  const query = params.filter((p) => p.in === 'query').flatMap((p) => queryEntries(doc, p))
  const header: PostmanVariable[] = []
  const body = bodyOf(doc, op)
  // Raw bodies name their type (Postman would send NDJSON as text/plain); form bodies get
  // theirs, with the multipart boundary, from Postman.
  if (body?.body.mode === 'raw') header.push({ key: 'Content-Type', value: body.contentType })
  for (const p of params.filter((p) => p.in === 'header' && !managedHeaders.has(String(p.name).toLowerCase()))) {
    // A fresh key on every send, so enabling it never replays an earlier request by mistake.
    const value = String(p.name).toLowerCase() === 'idempotency-key' ? '{{$guid}}' : text(exampleOf(doc, p))
    header.push({ key: p.name, value, ...(p.description ? { description: p.description } : {}), ...(p.required ? {} : { disabled: true }) })
  }
  const security = op.security ?? doc.security
  return {
    name: op.summary || op.operationId || `${method.toUpperCase()} ${path}`,
    request: {
      method: method.toUpperCase(),
      header,
      url: urlOf(path, params, query, shared, doc),
      ...(body ? { body: body.body } : {}),
      // `security: []` means no credential; anything else inherits the collection's bearer token.
      ...(Array.isArray(security) && security.length === 0 ? { auth: { type: 'noauth' as const } } : {}),
      ...(op.description ? { description: op.description } : {})
    }
  }
}

/** A Postman Collection v2.1 of every operation in `doc`, sent to `{{baseUrl}}` with `{{token}}`. */
export function toPostmanCollection(doc: OpenApiLike, options: { baseUrl: string; name?: string }): PostmanCollection {
  const folders = new Map<string, PostmanFolder>()
  for (const tag of doc.tags ?? []) folders.set(tag.name, { name: tag.name, ...(tag.description ? { description: tag.description } : {}), item: [] })
  const others: PostmanFolder = { name: untagged, item: [] }
  const shared = new Map<string, PostmanVariable>()
  for (const [path, rawItem] of Object.entries(doc.paths ?? {})) {
    const pathItem = deref(doc as Json, rawItem) ?? {}
    for (const [method, op] of Object.entries<Json>(pathItem)) {
      if (!methods.has(method) || !op || typeof op !== 'object') continue
      // An operation with several tags goes in the first one's folder only, not once per tag.
      const tag: string | undefined = op.tags?.[0]
      let folder = others
      if (tag !== undefined) {
        if (!folders.has(tag)) folders.set(tag, { name: tag, item: [] })
        folder = folders.get(tag)!
      }
      folder.item.push(requestOf(doc as Json, path, pathItem, method, op, shared))
    }
  }
  const item = [...folders.values(), others].filter((f) => f.item.length)
  return {
    info: {
      name: options.name ?? doc.info?.title ?? 'API',
      ...(doc.info?.description ? { description: doc.info.description } : {}),
      ...(doc.info?.version ? { version: doc.info.version } : {}),
      schema: postmanSchema
    },
    item,
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] },
    variable: [
      { key: 'baseUrl', value: options.baseUrl.replace(/\/+$/, ''), type: 'string' },
      { key: 'token', value: '', type: 'string', description: 'A bearer token: an API key, personal access token or service account token.' },
      ...[...shared.values()].map((v) => ({ ...v, type: 'string' }))
    ]
  }
}
