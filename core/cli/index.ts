import { parseArgs } from 'node:util'
import { createPlatform } from '../app.ts'
import { loadConfig } from '../config.ts'
import type { Platform } from '../declarations.ts'
import { migrateLatest } from '../db/migrate.ts'
import { openDatabase } from '../db/index.ts'
import { ModuleDefinitionError } from '../modules/validate.ts'
import type { Plugin } from '../plugin.ts'
import { describeError, identityCommand } from './identity.ts'

const usage = `records: admin CLI of the records platform (works with or without the server running)

  records migrate                                   bring the database schema up to date
  records tenant list                               tenants and their installed modules

  records user create --tenant ID --username NAME [--display-name TEXT] [--email ADDR] [--roles R1,R2] [--password-stdin]
                                                    create a user; with --password-stdin the password is read from stdin
  records user list --tenant ID                     users with their direct and effective roles
  records user password --tenant ID --user NAME --password-stdin
  records user deactivate|activate --tenant ID --user NAME
  records role list --tenant ID                     roles this tenant can grant (admin + module roles)
  records role grant|revoke --tenant ID --user NAME --role ROLE
  records group create --tenant ID --name NAME [--roles R1,R2]
  records group add|remove --tenant ID --group NAME --user NAME
  records group list --tenant ID

  records token create --tenant ID --type api-key|personal|service-account --name LABEL
                       [--user NAME] [--scopes S1,S2] [--roles R1,R2] [--expires ISO-8601]
                                                    issue a token; it is printed once, alone on the last line
                                                    (personal needs --user; service-account needs --scopes)
  records token list --tenant ID                    tokens of a tenant (prefix, name, state; never the secret)
  records token revoke TOKEN-ID                     revoke a token; it fails with 401 from the next call on
  records scopes                                    the scope names tokens can carry

Database: DATABASE_URL, or the embedded PostgreSQL in ./data (started if needed).`

async function withPlatform<T>(fn: (p: Platform) => Promise<T>): Promise<T> {
  const platform = await createPlatform(loadConfig({ logLevel: process.env.LOG_LEVEL ? undefined : 'warn' } as any), { limiter: false })
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

/** `records …` (bin/records.js hands it the plugins, whose commands join core's). */
export async function runCli(argv: string[], plugins: readonly Plugin[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      type: { type: 'string' },
      name: { type: 'string' },
      expires: { type: 'string' },
      username: { type: 'string' },
      user: { type: 'string' },
      'display-name': { type: 'string' },
      email: { type: 'string' },
      roles: { type: 'string' },
      role: { type: 'string' },
      group: { type: 'string' },
      scopes: { type: 'string' },
      'password-stdin': { type: 'boolean' },
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
  const command = plugins.flatMap((pl) => pl.cli ?? []).find((c) => c.area === area && c.action === action)
  if (command) {
    await withPlatform((platform) => command.run({ platform, values, arg, out: (line) => process.stdout.write(line + '\n'), fail }))
    return
  }
  if (['user', 'role', 'group', 'scopes'].includes(area)) {
    const done = await withPlatform((p) => identityCommand(p, area, action, arg, values, (line) => process.stdout.write(line + '\n'), fail))
    if (done) return
  }
  fail(`unknown command "${positionals.join(' ')}"\n\n${usage}`)
}

/** The CLI's answer to an error: one line an operator can act on, exit 1. */
export function cliFailed(err: unknown): never {
  process.stderr.write(`records: ${err instanceof ModuleDefinitionError ? err.message : describeError(err)}\n`)
  process.exit(1)
}
