import { scopeCatalogue } from '../auth/scopes.ts'
import type { CliContext } from '../plugin.ts'
import { ApiError } from '../errors/index.ts'

/** Service errors as one line an operator can act on (field problems included). */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    // A validation problem's message already spells its fields; only those it leaves out are added.
    const fields = (err.extra.errors as Array<{ field: string; detail: string }> | undefined)
      ?.map((e) => `${e.field} ${e.detail}`)
      .filter((f) => !err.message.includes(f))
    return fields?.length ? `${err.message} ${fields.join('; ')}` : err.message
  }
  return (err as Error)?.message ?? String(err)
}

/**
 * Users, roles and groups from the command line, through the same directory the API uses
 * (tokens are the tokens plugin's commands).
 */
export async function identityCommand(c: CliContext, area: string, action: string | undefined): Promise<boolean> {
  const { platform: p, values: v, out, fail } = c
  const users = p.users

  if (area === 'user' && action === 'create') {
    const t = c.tenant()
    const password = v['password-stdin'] ? await c.input() : undefined
    const u = await users.create(t, {
      userName: c.required('username'),
      displayName: v['display-name'] as string | undefined,
      email: v.email as string | undefined,
      roles: c.list('roles'),
      password
    })
    out(
      `Created user ${u.id} "${u.userName}" in tenant ${t}; roles: ${u.effectiveRoles.join(', ') || 'none'}${password ? '; can sign in' : '; no password (cannot sign in)'}.`
    )
    return true
  }
  if (area === 'user' && action === 'list') {
    for (const u of await users.list(c.tenant())) {
      out(
        `${u.id}\t${u.userName}\t${u.active ? 'active' : 'inactive'}\troles ${u.roles.join(',') || '-'}\tgroups ${u.groups.map((g) => g.displayName).join(',') || '-'}\teffective ${u.effectiveRoles.join(',') || '-'}`
      )
    }
    return true
  }
  if (area === 'user' && action === 'password') {
    const t = c.tenant()
    if (!v['password-stdin']) fail('give the new password on stdin with --password-stdin')
    const u = await users.find(t, c.required('user'))
    await users.setPassword(t, u.id, await c.input())
    out(`Password of ${u.userName} changed; their browser sessions were ended.`)
    return true
  }
  if (area === 'user' && (action === 'deactivate' || action === 'activate')) {
    const t = c.tenant()
    const u = await users.setActive(t, (await users.find(t, c.required('user'))).id, action === 'activate')
    out(`${u.userName} is now ${u.active ? 'active' : 'inactive (its tokens answer 401, its sessions are ended)'}.`)
    return true
  }
  if (area === 'role' && action === 'list') {
    const t = c.tenant()
    for (const role of users.knownRoles(t)) {
      const grants = [...p.tenants.get(t)!.modules.values()].flatMap((m) =>
        m.definition.permissions[role] ? [`${m.definition.key}: ${m.definition.permissions[role].join(' ')}`] : []
      )
      out(`${role}\t${role === 'admin' ? 'manages users, groups and every token of the tenant' : grants.join('; ')}`)
    }
    return true
  }
  if (area === 'role' && (action === 'grant' || action === 'revoke')) {
    const t = c.tenant()
    const u = await users.find(t, c.required('user'))
    const role = c.required('role')
    const after = action === 'grant' ? await users.grantRole(t, u.id, role) : await users.revokeRole(t, u.id, role)
    out(
      `${after.userName}: roles ${after.roles.join(', ') || 'none'}; effective ${after.effectiveRoles.join(', ') || 'none'}.`
    )
    return true
  }
  if (area === 'group' && action === 'create') {
    const g = await users.createGroup(c.tenant(), { displayName: c.required('name'), roles: c.list('roles') })
    out(`Created group ${g.id} "${g.displayName}" granting ${g.roles.join(', ') || 'no roles'}.`)
    return true
  }
  if (area === 'group' && (action === 'add' || action === 'remove')) {
    const t = c.tenant()
    const g = (await users.group(t, c.required('group'))) ?? fail(`no group "${v.group}"`)
    const u = await users.find(t, c.required('user'))
    if (action === 'add') await users.addMember(t, g.id, u.id)
    else await users.removeMember(t, g.id, u.id)
    out(
      `${u.userName} ${action === 'add' ? 'added to' : 'removed from'} ${g.displayName}; effective roles now ${(await users.find(t, u.id)).effectiveRoles.join(', ') || 'none'}.`
    )
    return true
  }
  if (area === 'group' && action === 'list') {
    for (const g of await users.listGroups(c.tenant()))
      out(`${g.id}\t${g.displayName}\troles ${g.roles.join(',') || '-'}\t${g.members.length} members`)
    return true
  }
  if (area === 'scopes') {
    for (const [name, s] of Object.entries(scopeCatalogue))
      out(`${name}${s.perModule ? '[:<moduleKey>]' : ''}\t${s.description}`)
    return true
  }
  return false
}
