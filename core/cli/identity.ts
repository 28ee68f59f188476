import { scopeCatalogue } from '../auth/scopes.ts'
import type { Platform } from '../declarations.ts'
import { ApiError } from '../errors/index.ts'

export interface CliValues {
  tenant?: string
  type?: string
  name?: string
  expires?: string
  username?: string
  user?: string
  'display-name'?: string
  email?: string
  roles?: string
  role?: string
  group?: string
  scopes?: string
  'password-stdin'?: boolean
}

type Out = (line: string) => void
type Fail = (message: string) => never

const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : undefined)

/** Service errors as one line an operator can act on (field problems included). */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    // A validation problem's message already spells its fields; only those it leaves out are added.
    const fields = (err.extra.errors as Array<{ field: string; detail: string }> | undefined)?.map((e) => `${e.field} ${e.detail}`).filter((f) => !err.message.includes(f))
    return fields?.length ? `${err.message} ${fields.join('; ')}` : err.message
  }
  return (err as Error)?.message ?? String(err)
}

/**
 * Users, roles and groups from the command line, through the same directory the API uses
 * (tokens are the tokens plugin's commands).
 */
export async function identityCommand(p: Platform, area: string, action: string | undefined, arg: string | undefined, v: CliValues, out: Out, fail: Fail, input: () => Promise<string>): Promise<boolean> {
  const readStdin = async () => (await input()).replace(/\r?\n$/, '')
  const tenantId = () => {
    if (!v.tenant) fail('--tenant is required')
    if (!p.tenants.get(v.tenant!)) fail(`no tenant "${v.tenant}" (see: records tenant list)`)
    return v.tenant!
  }
  const need = (value: string | undefined, flag: string) => value ?? fail(`--${flag} is required`)
  const users = p.users

  if (area === 'user' && action === 'create') {
    const t = tenantId()
    const password = v['password-stdin'] ? await readStdin() : undefined
    const u = await users.create(t, { userName: need(v.username, 'username'), displayName: v['display-name'], email: v.email, roles: list(v.roles), password })
    out(`Created user ${u.id} "${u.userName}" in tenant ${t}; roles: ${u.effectiveRoles.join(', ') || 'none'}${password ? '; can sign in' : '; no password (cannot sign in)'}.`)
    return true
  }
  if (area === 'user' && action === 'list') {
    for (const u of await users.list(tenantId())) {
      out(`${u.id}\t${u.userName}\t${u.active ? 'active' : 'inactive'}\troles ${u.roles.join(',') || '-'}\tgroups ${u.groups.map((g) => g.displayName).join(',') || '-'}\teffective ${u.effectiveRoles.join(',') || '-'}`)
    }
    return true
  }
  if (area === 'user' && action === 'password') {
    const t = tenantId()
    if (!v['password-stdin']) fail('give the new password on stdin with --password-stdin')
    const u = await users.find(t, need(v.user, 'user'))
    await users.setPassword(t, u.id, await readStdin())
    out(`Password of ${u.userName} changed; their browser sessions were ended.`)
    return true
  }
  if (area === 'user' && (action === 'deactivate' || action === 'activate')) {
    const t = tenantId()
    const u = await users.setActive(t, (await users.find(t, need(v.user, 'user'))).id, action === 'activate')
    out(`${u.userName} is now ${u.active ? 'active' : 'inactive (its tokens answer 401, its sessions are ended)'}.`)
    return true
  }
  if (area === 'role' && action === 'list') {
    const t = tenantId()
    for (const role of users.knownRoles(t)) {
      const grants = [...p.tenants.get(t)!.modules.values()].flatMap((m) => (m.definition.permissions[role] ? [`${m.definition.key}: ${m.definition.permissions[role].join(' ')}`] : []))
      out(`${role}\t${role === 'admin' ? 'manages users, groups and every token of the tenant' : grants.join('; ')}`)
    }
    return true
  }
  if (area === 'role' && (action === 'grant' || action === 'revoke')) {
    const t = tenantId()
    const u = await users.find(t, need(v.user, 'user'))
    const role = need(v.role, 'role')
    const after = action === 'grant' ? await users.grantRole(t, u.id, role) : await users.revokeRole(t, u.id, role)
    out(`${after.userName}: roles ${after.roles.join(', ') || 'none'}; effective ${after.effectiveRoles.join(', ') || 'none'}.`)
    return true
  }
  if (area === 'group' && action === 'create') {
    const g = await users.createGroup(tenantId(), { displayName: need(v.name, 'name'), roles: list(v.roles) })
    out(`Created group ${g.id} "${g.displayName}" granting ${g.roles.join(', ') || 'no roles'}.`)
    return true
  }
  if (area === 'group' && (action === 'add' || action === 'remove')) {
    const t = tenantId()
    const g = (await users.group(t, need(v.group, 'group'))) ?? fail(`no group "${v.group}"`)
    const u = await users.find(t, need(v.user, 'user'))
    if (action === 'add') await users.addMember(t, g.id, u.id)
    else await users.removeMember(t, g.id, u.id)
    out(`${u.userName} ${action === 'add' ? 'added to' : 'removed from'} ${g.displayName}; effective roles now ${(await users.find(t, u.id)).effectiveRoles.join(', ') || 'none'}.`)
    return true
  }
  if (area === 'group' && action === 'list') {
    for (const g of await users.listGroups(tenantId())) out(`${g.id}\t${g.displayName}\troles ${g.roles.join(',') || '-'}\t${g.members.length} members`)
    return true
  }
  if (area === 'scopes') {
    for (const [name, s] of Object.entries(scopeCatalogue)) out(`${name}${s.perModule ? '[:<moduleKey>]' : ''}\t${s.description}`)
    return true
  }
  return false
}
