/** The operations of a (tenant) OpenAPI document, with `$ref`s of parameters followed. */

export type Schema = Record<string, any>

export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required: boolean
  schema: Schema
  style?: string
}

export interface Operation {
  id: string
  method: string
  /** The path template, e.g. `/api/v1/records/{id}:transition`. */
  path: string
  params: Parameter[]
  /** Media types of the request body and its schema (the first type's), when it takes one. */
  body?: { types: string[]; schema?: Schema; required: boolean }
  /** Whether the operation needs no credential (`security: []`). */
  open: boolean
}

const methods = ['get', 'put', 'post', 'patch', 'delete']

/** Follows a local `$ref` (`#/components/...`). */
export function resolve(doc: Schema, node: Schema | undefined): Schema | undefined {
  let n = node
  for (let hops = 0; n?.$ref && hops < 20; hops++) {
    n = (n.$ref as string)
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((at: any, key) => at?.[key], doc)
  }
  return n
}

/** The component name a `$ref` points at (`#/components/schemas/IncidentPayload` → `IncidentPayload`). */
export const refName = (s: Schema | undefined): string | undefined =>
  typeof s?.$ref === 'string' ? s.$ref.split('/').pop() : undefined

/** Every path + method of the document, sorted for a stable order (so seeds replay). */
export function operationsOf(doc: Schema): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries<Schema>(doc.paths ?? {})) {
    for (const method of methods) {
      const op = item[method]
      if (!op) continue
      const byKey = new Map<string, Parameter>()
      for (const raw of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const p = resolve(doc, raw) as Parameter
        byKey.set(`${p.in}:${p.name.toLowerCase()}`, {
          ...p,
          required: !!p.required,
          schema: resolve(doc, p.schema) ?? {}
        })
      }
      const body = resolve(doc, op.requestBody)
      const types = Object.keys(body?.content ?? {})
      out.push({
        id: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        params: [...byKey.values()],
        body: types.length ? { types, schema: body!.content[types[0]].schema, required: !!body!.required } : undefined,
        open:
          Array.isArray(op.security) &&
          (op.security.length === 0 || op.security.some((s: object) => Object.keys(s).length === 0))
      })
    }
  }
  return out.sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path.localeCompare(b.path)))
}
