import { parseArgs } from 'node:util'
import { createApp, createPlatform } from '../app.ts'
import { loadConfig } from '../config.ts'
import type { App, Platform } from '../declarations.ts'
import { migrate, openDatabase } from '../db/index.ts'
import { systemScope } from '../db/tenant-scope.ts'
import { ModuleDefinitionError } from '../modules/validate.ts'
import { checkDependencies, type CliContext, type Plugin } from '../plugin.ts'
import { describeError, identityCommand } from './identity.ts'
import { moduleCommand } from './modules.ts'
import { clockCommand } from './clock.ts'
import { logger } from '../logger.ts'

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

  records module new KEY [--name @scope/package] [--dir PATH]
                                                    scaffold a module package (definition, README, tsconfig, manifest)
  records module check FOLDER|TARBALL [--previous FOLDER|TARBALL] [--load-only] [--max-transitions N]
                                                    load a module package as a deployment would (OK, or REFUSED with
                                                    where and what), then run the conformance kit on a scratch
                                                    database: records, every transition (at most N, default 40),
                                                    row and field rules, bulk, exports, OpenAPI, GraphQL; one line
                                                    per check, exit 1 on any failure; --load-only: no kit;
                                                    --previous: first the upgrade from that published version, in
                                                    memory: the release accepted (its migrations answer every
                                                    breaking change), and sample records of the old version (minimal
                                                    and full, one per state) moved by the migrations and valid
  records module diff OLD NEW                       what a new version changes for stored records: breaking changes,
                                                    compatible ones, the migration chain the new package declares
                                                    and any change it leaves unanswered; REFUSED (exit 1) for a
                                                    downgrade, or breaking changes without a new major version or
                                                    without migrations that answer them
  records module migrations --tenant ID [--module KEY]
                                                    each migration run of the tenant's modules (to version, state,
                                                    total, migrated, refused, remaining, started, finished) and
                                                    every record it refused (number, id, from version, reason)
  records module dry-run --tenant ID --module KEY [--package FOLDER|TARBALL]
                                                    every live record not under the target version (the loaded
                                                    package's, or the given package's) moved in memory: each one it
                                                    would refuse, with why, then a count; writes nothing; exit 1
                                                    when any would be refused

  records clock show|reset                          the time of every instance (clock.controllable only, never in
                                                    production): the system's, moved, or fixed
  records clock set --offset 30d|-2h|90m | --at ISO-8601
                                                    move it for every instance at once (due dates, overdue,
                                                    date-triggered transitions, recurrence)

Database: DATABASE_URL, or the embedded PostgreSQL in ./data (started if needed).`

/** Where the CLI reads and writes, and the configuration it starts from: the process's, or a test's. */
export interface CliIo {
  out(text: string): void
  err(text: string): void
  /** The whole of standard input (`--password-stdin`). */
  input(): Promise<string>
  /** Configuration overrides on top of config/ and the environment (tests: their database). */
  config?: Record<string, unknown>
}

const processIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  async input() {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  }
}

/** A refusal of the command line itself (unknown tenant, missing flag): exit code 2. */
class CliUsageError extends Error {}

/** `records module check` refused the package (it said why on stdout): exit code 1. */
class ModuleRefused extends Error {}

function fail(message: string): never {
  throw new CliUsageError(message)
}

async function withPlatform<T>(io: CliIo, plugins: readonly Plugin[], fn: (p: Platform) => Promise<T>): Promise<T> {
  const platform = await createPlatform(
    loadConfig({ logLevel: process.env.LOG_LEVEL ? undefined : 'warn', ...io.config }),
    plugins,
    { limiter: false }
  )
  try {
    // An operator's command acts across tenants; a service it calls with a tenant's system principal narrows to that tenant.
    return await systemScope('cli', () => fn(platform))
  } finally {
    await platform.db.close()
  }
}

/**
 * `records …` (bin/records.js hands it the plugins, whose commands join core's). Returns
 * the exit code: 0 done, 2 a refused command line, 1 a failure; the reason is one line
 * on stderr an operator can act on.
 */
export async function runCli(argv: string[], plugins: readonly Plugin[], io: CliIo = processIo): Promise<number> {
  try {
    await run(argv, plugins, io)
    return 0
  } catch (err) {
    if (err instanceof CliUsageError) {
      io.err(`records: ${err.message}\n`)
      return 2
    }
    if (err instanceof ModuleRefused) return 1
    io.err(`records: ${err instanceof ModuleDefinitionError ? err.message : describeError(err)}\n`)
    return 1
  }
}

async function run(argv: string[], plugins: readonly Plugin[], io: CliIo): Promise<void> {
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
      dir: { type: 'string' },
      'load-only': { type: 'boolean' },
      'max-transitions': { type: 'string' },
      previous: { type: 'string' },
      module: { type: 'string' },
      package: { type: 'string' },
      offset: { type: 'string' },
      at: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  const out = (line: string) => io.out(line + '\n')
  const [area, action, arg, second] = positionals
  if (values.help || !area) return out(usage)
  if (area === 'migrate') {
    const config = loadConfig(io.config)
    checkDependencies(plugins)
    const db = await openDatabase(config, plugins, { migrate: false })
    try {
      const ran = await migrate(db.url, config.database.role, plugins)
      return out(ran.length ? `Ran migrations: ${ran.join(', ')}` : 'Schema is up to date.')
    } finally {
      await db.close()
    }
  }
  if (area === 'module') {
    // The check says itself what it refused; the registry's log lines would repeat it.
    const config = loadConfig(io.config)
    logger.setLevel('silent')
    const result = await moduleCommand(
      { out, fail, modules: config.modules, plugins, config: io.config },
      action,
      arg,
      values,
      second
    )
    if (result === 'refused') throw new ModuleRefused()
    if (result) return
  }
  if (area === 'tenant' && action === 'list') {
    return withPlatform(io, plugins, async (p) => {
      for (const t of p.tenants.list()) out(`${t.id}\t${t.name}\t${[...t.modules.keys()].join(',') || '-'}`)
    })
  }
  const command = plugins.flatMap((pl) => pl.cli ?? []).find((c) => c.area === area && c.action === action)
  const context = (platform: Platform): CliContext => {
    const required = (flag: string) => {
      const v = values[flag as keyof typeof values]
      return typeof v === 'string' ? v : fail(`--${flag} is required`)
    }
    let app: App | undefined
    return {
      platform,
      // Commands call services through the app, so their hooks run as for REST (built on first use).
      get app() {
        return (app ??= createApp(platform, plugins))
      },
      values,
      arg,
      out,
      fail,
      required,
      list: (flag) => {
        const v = values[flag as keyof typeof values]
        return typeof v === 'string' && v
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : undefined
      },
      tenant: () => {
        const t = required('tenant')
        return platform.tenants.get(t) ? t : fail(`no tenant "${t}" (see: records tenant list)`)
      },
      input: async () => (await io.input()).replace(/\r?\n$/, '')
    }
  }
  if (command) return withPlatform(io, plugins, (platform) => command.run(context(platform)))
  if (area === 'clock') return withPlatform(io, plugins, (p) => clockCommand(context(p), action))
  if (['user', 'role', 'group', 'scopes'].includes(area)) {
    const done = await withPlatform(io, plugins, (p) => identityCommand(context(p), area, action))
    if (done) return
  }
  fail(`unknown command "${positionals.join(' ')}"\n\n${usage}`)
}
