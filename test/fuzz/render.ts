import type { Case, Mutation } from './cases.ts'
import { pathRefs } from './cases.ts'
import {
  headerValues,
  keys,
  lookalikes,
  ndjsonBodies,
  queryShapes,
  rawBodies,
  values,
  valuesOf,
  wireStrings,
  wireVariants
} from './hostile.ts'
import type { JsonPath, Kind, Place } from './samples.ts'
import { fullPayload, type Pools } from './seed.ts'
import { cloneJson, jsonText, obj, Raw, setKey, wtf8, type JsonLike, type WireRequest } from './wire.ts'

/** What a case became on the wire, and in words. */
export interface Rendered {
  wire: WireRequest
  /** One line per mutation applied, e.g. `body /payload/title := "\u0000"`. */
  applied: string[]
  /** Pooled references the path used (to replace what a success used up). */
  refs: string[]
  /** Whether an Idempotency-Key header went out (a refusal may then store its answer). */
  idempotencyKey: boolean
  /** The JSON body as sent, when it was one value (the transition oracle reads it). */
  json?: JsonLike
}

export interface RenderContext {
  pools: Pools
  tokens: Record<string, string>
  /** A new Idempotency-Key for `<fresh>`. */
  freshKey(): string
}

/** The head (request line and headers) stays below Node's 16 KiB limit; the framing test goes beyond it. */
const maxHead = 14_000

const smallRawBodies = rawBodies.filter((b) => b.bytes().length <= 16_384)

/** Marks a query pair whose name is already the whole text (`a[]=x&a[]=y`). */
const asIs = '\u0000as-is'

const show = (s: string) =>
  s.length > 60 ? `${JSON.stringify(s.slice(0, 40))}…(${s.length} chars)` : JSON.stringify(s)
const pointer = (p: JsonPath) => `/${p.join('/')}`

type Container = Record<string, JsonLike> | JsonLike[]

/** The parent of `path` in `root` (creating objects on the way) and the last key; undefined for the root. */
function parentOf(root: { v: JsonLike }, path: JsonPath): { parent: Container; key: string | number } | undefined {
  if (!path.length) return undefined
  let at: any = root
  let key: string | number = 'v'
  for (const step of path) {
    if (at[key] === null || typeof at[key] !== 'object' || at[key] instanceof Raw)
      at[key] = typeof step === 'number' ? [] : obj()
    at = at[key]
    key = step
  }
  return { parent: at, key }
}

function put(root: { v: JsonLike }, path: JsonPath, value: JsonLike) {
  const p = parentOf(root, path)
  if (!p) root.v = value
  else if (Array.isArray(p.parent)) p.parent[p.key as number] = value
  else setKey(p.parent, String(p.key), value)
}

function get(root: { v: JsonLike }, path: JsonPath): JsonLike | undefined {
  let at: any = root.v
  for (const step of path) at = at !== null && typeof at === 'object' && !(at instanceof Raw) ? at[step] : undefined
  return at
}

function applyBody(m: Extract<Mutation, { at: 'body' }>, c: Case, body: { v: JsonLike }, full: () => JsonLike): string {
  // `only` narrows the places to one kind; `smuggle` and `key` pick among the object places.
  const kinds: Kind[] | undefined =
    m.how === 'set' && m.only ? [m.only] : m.how === 'smuggle' || m.how === 'key' ? ['object'] : undefined
  const places = (kinds && c.base.targets.filter((p) => kinds.includes(p.kind))) || []
  const pool = places.length ? places : c.base.targets
  const place: Place = 'target' in m ? pool[m.target % pool.length] : { path: [], kind: 'any' }
  const path = place.path
  switch (m.how) {
    case 'set': {
      const current = get(body, path)
      if (m.typed && place.kind === 'enum' && typeof current === 'string') {
        const l = lookalikes[m.value % lookalikes.length]
        put(body, path, l.f(current))
        return `body ${pointer(path)} ${l.label}`
      }
      const list = m.typed ? valuesOf[place.kind] : values
      const hv = list[m.value % list.length]
      put(body, path, hv.make(full))
      return `body ${pointer(path)} := ${hv.label}`
    }
    case 'smuggle': {
      const node = get(body, path)
      const inner = node && typeof node === 'object' && !Array.isArray(node) && !(node instanceof Raw) ? node : full()
      put(
        body,
        path,
        m.via === '__proto__' ? obj([['__proto__', inner]]) : obj([['constructor', obj([['prototype', inner]])]])
      )
      return `body ${pointer(path)}: its members moved under ${m.via}`
    }
    case 'key': {
      let node = get(body, path)
      if (node === null || typeof node !== 'object' || Array.isArray(node) || node instanceof Raw)
        put(body, path, (node = obj()))
      const hv = values[m.value % values.length]
      setKey(node, keys[m.key], hv.make(full))
      return `body ${pointer(path)} gets member ${show(keys[m.key])} := ${hv.label}`
    }
    case 'drop': {
      const p = parentOf(body, path)
      if (!p) body.v = obj()
      else if (Array.isArray(p.parent)) p.parent.splice(p.key as number, 1)
      else delete p.parent[p.key as string]
      return `body ${pointer(path)} removed`
    }
    case 'lookalike': {
      const l = lookalikes[m.variant]
      const node = get(body, path)
      if (
        node &&
        typeof node === 'object' &&
        !Array.isArray(node) &&
        !(node instanceof Raw) &&
        Object.keys(node).length
      ) {
        const k = Object.keys(node)[0]
        const v = node[k]
        delete node[k]
        setKey(node, l.f(k), v)
        return `body ${pointer(path)}: member ${show(k)} renamed ${l.label}`
      }
      put(body, path, l.f(typeof node === 'string' ? node : jsonText(node ?? 'x')))
      return `body ${pointer(path)} ${l.label}`
    }
    case 'raw':
      return ''
  }
}

export async function render(c: Case, rc: RenderContext): Promise<Rendered> {
  for (let n = c.mutations.length; ; n--) {
    const r = await renderWith({ ...c, mutations: c.mutations.slice(0, n) }, rc)
    // Damage below HTTP is the framing test's: here the parser must let every request through.
    if (
      /[^\x21-\x7e]/.test(r.wire.target) ||
      r.wire.headers.some(([k, v]) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) || /[\x00-\x08\x0a-\x1f\x7f]/.test(v))
    ) {
      throw new Error(
        `the request holds bytes an HTTP parser refuses: ${JSON.stringify(r.wire.target.slice(0, 200))} ${JSON.stringify(r.wire.headers)}`
      )
    }
    const head = r.wire.target.length + r.wire.headers.reduce((sum, [k, v]) => sum + k.length + wtf8(v).length + 4, 0)
    if (head <= maxHead || n === 0)
      return n < c.mutations.length
        ? {
            ...r,
            applied: [
              ...r.applied,
              `(${c.mutations.length - n} later mutation(s) dropped to keep the head under 16 KiB)`
            ]
          }
        : r
  }
}

async function renderWith(c: Case, rc: RenderContext): Promise<Rendered> {
  const { base } = c
  const applied: string[] = []
  const path = { ...base.path }
  let query = [...base.query]
  if (base.storage) {
    const url = await rc.pools.signedUrl(base.storage)
    Object.assign(path, url.params)
    query = [...url.query]
  }
  const token = rc.tokens[c.caller]
  const headers = new Map<string, string[]>([['Authorization', [`Bearer ${token}`]]])
  if (base.contentType) headers.set('Content-Type', [base.contentType])
  if (c.key !== 'none') headers.set('Idempotency-Key', [c.key === 'fresh' ? rc.freshKey() : 'fz-reused'])
  const body = {
    v:
      base.body?.kind === 'json'
        ? cloneJson(base.body.value)
        : base.body?.kind === 'ndjson'
          ? cloneJson(base.body.lines)
          : (null as JsonLike)
  }
  let rawBody: Buffer | undefined
  const full = () => fullPayload(rc.pools, base.module)
  const pathNames = Object.keys(path)

  for (const m of c.mutations) {
    if (m.at === 'body') {
      if (m.how === 'raw') {
        // A body where none is expected stays small: a server that answers without reading a large
        // one and closes makes the kernel reset the connection, which cuts its answer short.
        const list = base.body?.kind === 'ndjson' ? ndjsonBodies : base.body ? rawBodies : smallRawBodies
        rawBody = list[m.body % list.length].bytes()
        applied.push(`body replaced by ${list[m.body % list.length].label}`)
      } else applied.push(applyBody(m, c, body, full))
    } else if (m.at === 'query') {
      const name = base.queryNames[m.name % base.queryNames.length]
      const current = query.find(([k, v]) => k === name && v !== asIs)?.[1] ?? 'x'
      query = query.filter(([k]) => k !== name)
      if (m.how === 'set') {
        query.push([name, wireStrings[m.value]])
        applied.push(`query ${name}=${show(wireStrings[m.value])}`)
      } else if (m.how === 'variant') {
        query.push([name, wireVariants[m.variant].f(current)])
        applied.push(`query ${name} ${wireVariants[m.variant].label}`)
      } else {
        query.push([queryShapes[m.shape].f(name, wireStrings[m.value]), asIs])
        applied.push(`query ${name}=${show(wireStrings[m.value])} ${queryShapes[m.shape].label}`)
      }
    } else if (m.at === 'path') {
      if (!pathNames.length) continue
      const name = pathNames[m.name % pathNames.length]
      const current = path[name].startsWith('@') ? rc.pools.id(path[name].slice(1)) : path[name]
      path[name] =
        m.how === 'set' ? wireStrings[m.value] : m.how === 'ref' ? pathRefs[m.ref] : wireVariants[m.variant].f(current)
      applied.push(
        `path {${name}} := ${m.how === 'variant' ? `${wireVariants[m.variant].label} ${current}` : show(path[name])}`
      )
    } else {
      const raw = headerValues[m.name][m.value]
      const value = raw === '<fresh>' ? rc.freshKey() : raw === '<reused>' ? 'fz-reused' : raw.replace('<token>', token)
      if (raw === '<none>') headers.delete(m.name)
      else headers.set(m.name, m.how === 'twice' ? [...(headers.get(m.name) ?? [value]), value] : [value])
      applied.push(
        `header ${m.name} ${raw === '<none>' ? 'left out' : `${m.how === 'twice' ? 'sent twice, also as' : ':='} ${show(value)}`}`
      )
    }
  }

  const refs = Object.values(path)
    .filter((v) => v.startsWith('@'))
    .map((v) => v.slice(1))
  const target =
    base.op.path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
      path[name].startsWith('@') ? rc.pools.id(path[name].slice(1)) : path[name]
    ) + (query.length ? `?${query.map(([k, v]) => (v === asIs ? k : `${k}=${v}`)).join('&')}` : '')
  if (!rawBody && base.body) {
    if (base.body.kind === 'bytes') rawBody = Buffer.from(base.body.text)
    else if (base.body.kind === 'ndjson')
      rawBody = wtf8((Array.isArray(body.v) ? body.v : [body.v]).map(jsonText).join('\n') + '\n')
    else rawBody = wtf8(jsonText(body.v))
  }
  const wireHeaders: Array<[string, string]> = [...headers].flatMap(([k, vs]) =>
    vs.map((v): [string, string] => [k, v])
  )
  return {
    wire: { method: base.op.method, target, headers: wireHeaders, body: rawBody },
    applied: applied.filter(Boolean),
    refs,
    idempotencyKey: headers.has('Idempotency-Key'),
    json:
      base.body?.kind === 'json' && !c.mutations.some((m) => m.at === 'body' && m.how === 'raw') ? body.v : undefined
  }
}
