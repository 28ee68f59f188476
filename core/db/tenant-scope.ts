import { AsyncLocalStorage } from 'node:async_hooks'
import pg from 'pg'

/**
 * Which tenant's rows the database shows to the work running now. Row-level security
 * (core/db/row-security.ts) compares every tenant-owned row with the setting
 * `records.tenant`; this module sets it on each client the pool hands out, from the scope
 * of the code that asked for the client. The HTTP layer enters a tenant's scope once it
 * knows the caller (core/http/identify.ts), the authenticate hook does for internal calls
 * with a principal, and work that spans tenants names itself with `systemScope`.
 * Outside any scope the setting is empty and no tenant-owned row is visible.
 */
const scopes = new AsyncLocalStorage<string>()

/** The setting's value in system scope: every tenant's rows (the policy's second branch). */
export const allTenants = '*'

/** The PostgreSQL setting the row-level security policies read. */
export const tenantSetting = 'records.tenant'

/** The scope of the running code: a tenant id, `*` (system) or '' (none: nothing tenant-owned visible). */
export function currentScope(): string {
  return scopes.getStore() ?? ''
}

/** Runs fn with the database showing only `tenantId`'s rows. */
export function inTenant<T>(tenantId: string, fn: () => T): T {
  return scopes.run(tenantId, fn)
}

/**
 * Runs fn as a named system action that sees every tenant (credential and session lookups
 * before the tenant is known, tenants sync, sweeps across tenants, migrations, the CLI).
 * The name is for the reader: each call site says what it is, as systemPrincipal does.
 */
export function systemScope<T>(_name: string, fn: () => T): T {
  return scopes.run(allTenants, fn)
}

const pinned = Symbol('records.tenant pinned on this client')
type PinnedClient = pg.PoolClient & { [pinned]?: string }

/** The scope a pooled client last had set (the cross-tenant statement test reads it). */
export function scopeOfClient(client: pg.PoolClient): string | undefined {
  return (client as PinnedClient)[pinned]
}

/**
 * Sets the client's `records.tenant` to scope, unless it already holds it: with one tenant
 * (and most pools under load) that is every checkout but the first, so the hot paths pay
 * nothing. The setting is the session's (set outside any transaction, so no rollback undoes
 * it); a failure forgets what the client had, and the client is given back as broken.
 */
async function pin(client: PinnedClient, scope: string): Promise<void> {
  if (client[pinned] === scope) return
  client[pinned] = undefined
  await client.query(`SELECT set_config('${tenantSetting}', $1, false)`, [scope])
  client[pinned] = scope
}

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void
) => void

/**
 * The app's pool: every client it hands out (pool.query goes through connect too) carries
 * the scope of the caller, read when the caller asked, not when a client came free (a
 * waiting caller is resumed from another's release, in that caller's async context).
 */
export class ScopedPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>
  override connect(callback: ConnectCallback): void
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    const scope = currentScope()
    if (!callback) {
      return super.connect().then((client) =>
        (client as PinnedClient)[pinned] === scope
          ? client
          : pin(client, scope).then(
              () => client,
              (err) => {
                client.release(err)
                throw err
              }
            )
      )
    }
    super.connect((err, client, done) => {
      if (err || !client) return callback(err, client, done)
      if ((client as PinnedClient)[pinned] === scope) return callback(undefined, client, done)
      pin(client, scope).then(
        () => callback(undefined, client, done),
        (pinErr: Error) => {
          done(pinErr)
          callback(pinErr, undefined, () => undefined)
        }
      )
    })
  }
}

/**
 * The pool as a named system action: every query and checkout through it sees every
 * tenant. For tools and tests that inspect the database directly, never for request work.
 */
export function systemPool(pool: pg.Pool, name: string): pg.Pool {
  return scopedPool(pool, (fn) => systemScope(name, fn))
}

/** The pool with every query and checkout run inside `enter` (a scope read when the client is asked for). */
function scopedPool(pool: pg.Pool, enter: <T>(fn: () => T) => T): pg.Pool {
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query' || prop === 'connect') {
        const method = Reflect.get(target, prop, target) as (...args: unknown[]) => unknown
        return (...args: unknown[]) => enter(() => method.apply(target, args))
      }
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
}

/**
 * The pool for a store whose every call names its tenant (users, groups, tokens, sessions):
 * the named tenant is the scope, whoever calls (a request, the CLI, a job, a test's setup).
 */
export function tenantPool(pool: pg.Pool, tenantId: string): pg.Pool {
  return scopedPool(pool, (fn) => inTenant(tenantId, fn))
}
