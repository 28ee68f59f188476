import { parseArgs } from 'node:util'
import { createPlatform } from '../app.ts'
import { loadConfig } from '../config.ts'
import type { Platform } from '../declarations.ts'
import { migrateLatest } from '../db/migrate.ts'
import { openDatabase } from '../db/index.ts'
import { ModuleDefinitionError } from '../modules/validate.ts'

const usage = `records: admin CLI of the records platform (works with or without the server running)

  records migrate                                   bring the database schema up to date
  records tenant list                               tenants and their installed modules
  records token create --tenant ID --type api-key --name LABEL [--expires ISO-8601]
                                                    issue a token; it is printed once, alone on the last line
  records token list --tenant ID                    tokens of a tenant (prefix, name, state; never the secret)
  records token revoke TOKEN-ID                     revoke a token; it fails with 401 from the next call on

Database: DATABASE_URL, or the embedded PostgreSQL in ./data (started if needed).`

const types: Record<string, 'api_key'> = { 'api-key': 'api_key' }

async function withPlatform<T>(fn: (p: Platform) => Promise<T>): Promise<T> {
  const platform = await createPlatform(loadConfig({ logLevel: process.env.LOG_LEVEL ? undefined : 'warn' } as any))
  try {
    return await fn(platform)
  } finally {
    await platform.db.close()
  }
}

function fail(message: string): never {
  process.stderr.write(`records: ${message}\n`)
  process.exit(2)
}

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      type: { type: 'string' },
      name: { type: 'string' },
      expires: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  const [area, action, arg] = positionals
  if (values.help || !area) {
    process.stdout.write(usage + '\n')
    return
  }
  if (area === 'migrate') {
    const config = loadConfig()
    const db = await openDatabase(config, { migrate: false })
    try {
      const ran = await migrateLatest(db.url)
      process.stdout.write(ran.length ? `Ran migrations: ${ran.join(', ')}\n` : 'Schema is up to date.\n')
    } finally {
      await db.close()
    }
    return
  }
  if (area === 'tenant' && action === 'list') {
    await withPlatform(async (p) => {
      for (const t of p.tenants.list()) process.stdout.write(`${t.id}\t${t.name}\t${[...t.modules.keys()].join(',') || '-'}\n`)
    })
    return
  }
  if (area === 'token' && action === 'create') {
    const kind = types[values.type ?? '']
    if (!kind) fail(`--type must be one of: ${Object.keys(types).join(', ')} (personal and service-account tokens need users and scopes: see the identity issue)`)
    if (!values.tenant) fail('--tenant is required')
    if (!values.name) fail('--name is required')
    if (values.expires && Number.isNaN(Date.parse(values.expires))) fail('--expires must be an ISO 8601 date-time')
    await withPlatform(async (p) => {
      if (!p.tenants.get(values.tenant!)) fail(`no tenant "${values.tenant}" (see: records tenant list)`)
      const { token, credential } = await p.credentials.create({
        tenantId: values.tenant!,
        kind,
        name: values.name!,
        expiresAt: values.expires ? new Date(values.expires).toISOString() : null,
        createdBy: { type: 'system', id: 'cli', name: 'records CLI' }
      })
      process.stdout.write(`Created ${values.type} ${credential.id} "${credential.name}" for tenant ${credential.tenantId}${credential.expiresAt ? `, expires ${credential.expiresAt}` : ''}.\nThe token is shown once:\n${token}\n`)
    })
    return
  }
  if (area === 'token' && action === 'list') {
    if (!values.tenant) fail('--tenant is required')
    await withPlatform(async (p) => {
      for (const c of await p.credentials.list(values.tenant!)) {
        const state = c.revokedAt ? `revoked ${c.revokedAt}` : c.expiresAt && Date.parse(c.expiresAt) < Date.now() ? `expired ${c.expiresAt}` : 'active'
        process.stdout.write(`${c.id}\t${c.kind}\t${c.prefix}…\t${c.name}\t${state}\tlast used ${c.lastUsedAt ?? 'never'}\n`)
      }
    })
    return
  }
  if (area === 'token' && action === 'revoke') {
    if (!arg || !/^[0-9a-f-]{36}$/i.test(arg)) fail('give the id of the token to revoke (see: records token list --tenant ID)')
    await withPlatform(async (p) => {
      const revoked = await p.credentials.revoke(arg)
      if (!revoked) fail(`no token ${arg}`)
      process.stdout.write(`Revoked ${revoked.id} "${revoked.name}" of tenant ${revoked.tenantId} at ${revoked.revokedAt}.\n`)
    })
    return
  }
  fail(`unknown command "${positionals.join(' ')}"\n\n${usage}`)
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof ModuleDefinitionError) process.stderr.write(`records: ${err.message}\n`)
  else process.stderr.write(`records: ${err?.message ?? err}\n`)
  process.exit(1)
})
