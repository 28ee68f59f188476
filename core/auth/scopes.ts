/**
 * Token scopes. A token with scopes may do only what they name; a token without
 * scopes (tenant API keys, personal tokens left unscoped) is limited by roles alone.
 * Module-bound scopes take an optional `:<moduleKey>` suffix, e.g. `records:read:incident`.
 */
export const scopeCatalogue = {
  'records:read': { perModule: true, description: 'List and read records, their activity and the audit log' },
  'records:write': { perModule: true, description: 'Create and update records' },
  'records:delete': { perModule: true, description: 'Soft-delete records' },
  'records:transition': { perModule: true, description: 'Fire workflow transitions' },
  'bulk:write': { perModule: true, description: 'Bulk-load records as NDJSON' },
  'exports:read': { perModule: true, description: 'Poll export jobs and download their files' },
  'exports:write': { perModule: true, description: 'Start export jobs' },
  'attachments:read': { perModule: true, description: 'Get signed download URLs' },
  'attachments:write': { perModule: true, description: 'Get signed upload URLs' },
  'events:read': {
    perModule: false,
    description:
      'Read the events feed (each event still needs the read right on its module; identity events need the admin role)'
  },
  'modules:read': { perModule: false, description: 'List installed modules and read their schemas' },
  'tokens:write': { perModule: false, description: "Manage the tenant's tokens (needs an admin behind it)" },
  'webhooks:write': {
    perModule: false,
    description: "Manage the tenant's webhook subscriptions and read their delivery log (needs an admin behind it)"
  },
  scim: { perModule: false, description: 'Provision users and groups through SCIM 2.0' },
  graphql: { perModule: false, description: 'Use the GraphQL endpoint (each field still needs its own scope)' }
} as const satisfies Record<string, { perModule: boolean; description: string }>

export type Scope = keyof typeof scopeCatalogue
export type Scopes = 'all' | readonly string[]

/** The scope a module action needs: read → records:read, transition:x → records:transition, … */
export function scopeForAction(action: string): Scope {
  if (action.startsWith('transition:')) return 'records:transition'
  switch (action) {
    case 'read':
      return 'records:read'
    case 'create':
    case 'update':
      return 'records:write'
    case 'delete':
      return 'records:delete'
    case 'export':
      return 'exports:write'
    case 'attachments':
      return 'attachments:write'
    default:
      throw new Error(`no scope maps module action "${action}"`)
  }
}

/** Whether scopes grant `scope`, for any module or for `moduleKey`. */
export function hasScope(scopes: Scopes, scope: Scope, moduleKey?: string): boolean {
  if (scopes === 'all') return true
  return scopes.includes(scope) || (moduleKey !== undefined && scopes.includes(`${scope}:${moduleKey}`))
}

/** Checks requested scope names against the catalogue and the tenant's modules; returns the unknown ones. */
export function unknownScopes(requested: readonly string[], moduleKeys: readonly string[]): string[] {
  return requested.filter((s) => {
    const [area, verb, moduleKey, ...rest] = s.split(':')
    const base = (verb === undefined ? area : `${area}:${verb}`) as Scope
    const entry = scopeCatalogue[base] as { perModule: boolean } | undefined
    if (!entry || rest.length) return true
    return moduleKey !== undefined && (!entry.perModule || !moduleKeys.includes(moduleKey))
  })
}

/**
 * The scopes of `inner` that `outer` does not cover: a scope covers itself and, for
 * module-bound scopes, each of its `:<moduleKey>` forms (never the other way round).
 */
export function scopesBeyond(inner: Scopes, outer: Scopes): string[] {
  if (outer === 'all') return []
  if (inner === 'all') return ['all']
  return inner.filter((s) => {
    if (outer.includes(s)) return false
    const [area, verb, moduleKey] = s.split(':')
    return moduleKey === undefined || !outer.includes(`${area}:${verb}`)
  })
}

/** Whether `inner` asks for nothing `outer` lacks: a token never mints a wider one. */
export function scopesWithin(inner: Scopes, outer: Scopes): boolean {
  return scopesBeyond(inner, outer).length === 0
}
