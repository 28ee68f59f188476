import { resolve, type Operation, type Parameter, type Schema } from './operations.ts'
import { pascal, placesOf, sample, type Place } from './samples.ts'
import type { Pools } from './seed.ts'
import { obj, type JsonLike } from './wire.ts'

/**
 * The valid request each operation's cases start from: one per module where the operation
 * is about one (a record of that module, its bulk path, its export), derived from the
 * document's schemas with real ids from the pools.
 */

export interface Workflow {
  initial: string
  states: Array<{ key: string; requires?: string[] }>
  transitions: Array<{ key: string; from: string[]; to: string; requires?: string[] }>
}

export type BaseBody =
  { kind: 'json'; value: JsonLike } | { kind: 'ndjson'; lines: JsonLike[] } | { kind: 'bytes'; text: string }

export interface Base {
  op: Operation
  label: string
  module?: string
  /** Path parameter → its wire value, or `@<ref>` for a pooled id. */
  path: Record<string, string>
  /** Raw query pairs. */
  query: Array<[string, string]>
  /** Storage operations start from a signed URL, fetched when the request is sent. */
  storage?: 'upload' | 'download'
  contentType?: string
  body?: BaseBody
  /** Places in the body a mutation may hit (for NDJSON, a path starts with the line). */
  targets: Place[]
  /** Query parameter names a mutation may set: the declared ones, payload filters, unknown ones. */
  queryNames: string[]
  /** Header parameters the operation declares (mutations pick them more often). */
  headers: string[]
}

/** The pooled id an `{id}` of this path refers to. */
function idRef(path: string, module?: string): string {
  if (path.startsWith('/api/v1/records/')) return `@record:${module ?? 'incident'}:0`
  if (path.endsWith(':complete')) return '@attachment:pending'
  if (path.startsWith('/api/v1/attachments/')) return '@attachment:ready'
  if (path.startsWith('/api/v1/exports/')) return '@export'
  if (path.startsWith('/api/v1/tokens/')) return '@token:0'
  if (path.startsWith('/api/scim/v2/Users/')) return '@scim-user'
  if (path.startsWith('/api/scim/v2/Groups/')) return '@scim-group'
  if (path.startsWith('/api/scim/v2/ResourceTypes/')) return 'User'
  // Percent-encoded: the contract checker's path parameters never span a colon (colon methods follow them).
  if (path.startsWith('/api/scim/v2/Schemas/')) return encodeURIComponent('urn:ietf:params:scim:schemas:core:2.0:User')
  return '@record:incident:0'
}

/** The modules an operation is about: its bulk path, a `moduleKey` enum, a discriminator, a record id. */
function modulesOf(op: Operation, doc: Schema, modules: string[]): Array<string | undefined> {
  const bulk = /^\/api\/modules\/([a-z0-9-]+)\/bulk$/.exec(op.path)
  if (bulk) return [bulk[1]]
  const moduleParam = op.params.find((p) => p.name === 'moduleKey' && Array.isArray(p.schema.enum))
  if (moduleParam) return moduleParam.schema.enum
  const body = resolve(doc, op.body?.schema)
  if (body?.discriminator?.mapping) return Object.keys(body.discriminator.mapping)
  if (op.path.startsWith('/api/v1/records/{id}')) return modules
  return [undefined]
}

const enc = (v: JsonLike) => encodeURIComponent(String(v))

export function basesOf(op: Operation, doc: Schema, pools: Pools, workflows: Record<string, Workflow>): Base[] {
  return modulesOf(op, doc, pools.modules).map((module) => {
    const ctx = pools.context(module)
    const path: Record<string, string> = {}
    const query: Array<[string, string]> = []
    for (const p of op.params) {
      if (p.in === 'path')
        path[p.name] = p.name === 'id' ? idRef(op.path, module) : String(sample(ctx, p.schema, p.name))
      // Required parameters, and optional ones that are enums (moduleKey, action): the audit log needs one of them.
      else if (p.in === 'query' && (p.required || (Array.isArray(p.schema.enum) && p.name !== 'action')))
        query.push([p.name, enc(sample(ctx, p.schema, p.name))])
    }
    const queryNames = [...op.params.filter((p) => p.in === 'query').map((p) => p.name), 'fuzz', '__proto__']
    if (op.params.some((p) => p.name === 'payload' && p.style === 'deepObject') && module) {
      const fields = Object.keys(doc.components.schemas[`${pascal(module)}Payload`].properties)
      queryNames.push(...fields.slice(0, 6).flatMap((f) => [`payload[${f}]`, `payload[${f}][gte]`]))
    }
    const base: Base = {
      op,
      label: module ?? 'any',
      module,
      path,
      query,
      targets: [{ path: [], kind: 'object' }],
      queryNames,
      headers: op.params.filter((p: Parameter) => p.in === 'header').map((p) => p.name)
    }
    if (op.path.startsWith('/storage/')) base.storage = op.method === 'PUT' ? 'upload' : 'download'
    if (!op.body) return base
    base.contentType = op.body.types[0] === '*/*' ? 'text/plain' : op.body.types[0]
    if (!op.body.schema) {
      base.body = { kind: 'bytes', text: 'hello' }
      return base
    }
    if (op.body.types[0].includes('ndjson')) {
      // A new record, and one upserted by its externalRef (created once, then updated or unchanged).
      const line = sample(ctx, op.body.schema) as Record<string, JsonLike>
      base.body = {
        kind: 'ndjson',
        lines: [line, obj([...Object.entries(line), ['externalRef', `fuzz-bulk-${module}`]])]
      }
      base.targets = [0, 1].flatMap((i) => placesOf(ctx, op.body!.schema).map((p) => ({ ...p, path: [i, ...p.path] })))
      return base
    }
    let value = sample(ctx, op.body.schema) as Record<string, JsonLike>
    base.targets = placesOf(ctx, op.body.schema)
    const workflow = module ? workflows[module] : undefined
    if (op.id === 'transitionRecord' && workflow && module) {
      // The first transition out of the initial state, with the fields its target state requires.
      const t = workflow.transitions.find((x) => x.from.includes(workflow.initial)) ?? workflow.transitions[0]
      const needs = [...(workflow.states.find((s) => s.key === t.to)?.requires ?? []), ...(t.requires ?? [])]
      const full = sample(pools.context(module, true), {
        $ref: `#/components/schemas/${pascal(module)}Payload`
      }) as Record<string, JsonLike>
      value = obj([
        ['transition', t.key],
        ['payload', obj(needs.map((f) => [f, full[f]]))]
      ])
      base.targets.push(
        ...placesOf(ctx, { $ref: `#/components/schemas/${pascal(module)}PayloadPatch` }).map((p) => ({
          ...p,
          path: ['payload', ...p.path]
        }))
      )
    }
    base.body = { kind: 'json', value }
    return base
  })
}
