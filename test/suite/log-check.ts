/**
 * The suite's log check (issue 26): `npm test` has every server of the run write its whole
 * log (debug and up) to test/.logs/<pid>.ndjson and every test helper that creates a secret
 * record it in test/.logs/secrets.txt (test/helpers/secrets.ts); after tap, this greps all
 * the logs for every recorded secret and for anything shaped like one (a token, a webhook
 * secret, a signed URL's signature), and counts the request lines, so that an empty or
 * missing log cannot pass. A finding names the file and line, and the secret's line in
 * secrets.txt, never the secret.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, mkdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { projectRoot } from '../../core/paths.ts'

export const logsDir = join(projectRoot, 'test', '.logs')
export const secretsFile = join(logsDir, 'secrets.txt')

/** A fresh test/.logs, and the environment that sends every server's log there (one file per process, each capped). */
export function prepareLogs(): NodeJS.ProcessEnv {
  rmSync(logsDir, { recursive: true, force: true })
  mkdirSync(logsDir, { recursive: true })
  return {
    LOG_FILE: join(logsDir, '{pid}.ndjson'),
    LOG_FILE_LEVEL: 'debug',
    LOG_FILE_MAX_BYTES: String(256 * 1024 * 1024),
    RECORDS_TEST_SECRETS: secretsFile
  }
}

/** Shapes of secrets, as grep -E reads them (what core/log-redaction.ts replaces must never be left). */
const shapes = [
  '(^|[^A-Za-z0-9])(svc_k_|svc_p_|sa_)[0-9A-Za-z]{40}',
  'whsec_[A-Za-z0-9+/]{40,}',
  '[?&](sig|signature|X-Amz-Signature)=[^[&#" \\\\]{8,}'
]

export interface LogCheck {
  files: number
  bytes: number
  requestLines: number
  secrets: number
  /** `file:line: why`, never the secret. */
  findings: string[]
  /** Files that reached their cap and were rotated (the check saw only their last part). */
  rotated: string[]
}

/** file:line of every line of `files` that grep finds with `args`. */
function grepLines(args: string[], files: string[]): { file: string; line: number }[] {
  if (!files.length) return []
  const r = spawnSync('grep', ['-n', '-H', ...args, '--', ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  if (r.status === 2) throw new Error(`grep failed: ${r.stderr}`)
  return (r.stdout ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const m = /^(.*?):(\d+):/.exec(l)!
      return { file: m[1], line: Number(m[2]) }
    })
}

export function checkLogs(): LogCheck {
  const logs = existsSync(logsDir) ? readdirSync(logsDir).filter((f) => /\.ndjson(\.1)?$/.test(f)) : []
  const files = logs.map((f) => join(logsDir, f))
  const secrets = existsSync(secretsFile) ? readFileSync(secretsFile, 'utf8').split('\n').filter(Boolean) : []
  const findings: string[] = []
  const at = (hit: { file: string; line: number }) => `${relative(projectRoot, hit.file)}:${hit.line}`
  if (secrets.length) {
    for (const hit of grepLines(['-F', '-f', secretsFile], files)) {
      // Which secrets (by their line in secrets.txt): read that one line again.
      const text = readFileSync(hit.file, 'utf8').split('\n')[hit.line - 1] ?? ''
      const which = secrets.flatMap((s, i) => (text.includes(s) ? [i + 1] : []))
      findings.push(`${at(hit)}: holds the secret on line ${which.join(', ')} of ${relative(projectRoot, secretsFile)}`)
    }
  }
  for (const hit of grepLines(['-E', '-i', '-e', shapes.join('|')], files))
    findings.push(`${at(hit)}: holds a token, webhook secret or URL signature (by its shape)`)
  const counted = files.length
    ? spawnSync('grep', ['-c', '-H', '-F', '"msg":"request"', '--', ...files], { encoding: 'utf8' }).stdout
    : ''
  const requestLines = counted.split('\n').reduce((n, l) => n + (Number(/:(\d+)$/.exec(l)?.[1]) || 0), 0)
  return {
    files: files.length,
    bytes: files.reduce((n, f) => n + statSync(f).size, 0),
    requestLines,
    secrets: secrets.length,
    findings: [...new Set(findings)],
    rotated: logs.filter((f) => f.endsWith('.1'))
  }
}
