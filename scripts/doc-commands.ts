/**
 * Runs every ```sh block of README.md and docs/*.md exactly as written, in document
 * order, against a running service, so that the docs cannot drift from what works.
 * `.ci/smoke-embedded.sh` calls it in a fresh clone after starting the service with the
 * README's own start command.
 *
 * - Blocks run one after another in bash, with `set -e -o pipefail`; variables a block
 *   sets (`B`, `KEY`, `ID`…) carry over to the next blocks, as in a terminal.
 * - Every HTTP status curl gets is recorded (a `.curlrc` in a private CURL_HOME writes it
 *   to stderr, leaving stdout as the reader sees it): a block passes when bash exits 0
 *   and every status is 2xx or 3xx, or, for a block fenced ```sh status=NNN, when its
 *   last status is NNN (the docs' examples of an error).
 * - A block fenced ```sh setup is not run here: it is what the caller itself ran
 *   (`npm ci && npm start`, `npm ci && npm test`).
 *
 * Run it from the project folder of a throwaway clone: the blocks write files there and
 * change the running service's data. Usage: node --import tsx scripts/doc-commands.ts [file.md…]
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface DocBlock {
  file: string
  line: number
  code: string
  setup: boolean
  status?: number
}

/** The ```sh blocks of a Markdown text, with their fence attributes. */
export function shellBlocks(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```sh(?:\s+(.*))?$/.exec(lines[i])
    if (!fence) continue
    const attrs = (fence[1] ?? '').split(/\s+/).filter(Boolean)
    const start = i + 2
    const body: string[] = []
    for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i])
    const status = attrs.find((a) => a.startsWith('status='))
    blocks.push({
      file,
      line: start,
      code: body.join('\n'),
      setup: attrs.includes('setup'),
      ...(status ? { status: Number(status.slice(7)) } : {})
    })
  }
  return blocks
}

const blockTimeoutMs = 300_000
const shown = 3000

function runBlock(
  block: DocBlock,
  env: NodeJS.ProcessEnv,
  envFile: string
): Promise<{ code: number | null; out: string; statuses: number[] }> {
  const script = `set -a -e -o pipefail\n${block.code}\nenv -0 > "$__DOC_ENV"\n`
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], {
      env: { ...env, __DOC_ENV: envFile },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), blockTimeoutMs)
    child.on('close', (code) => {
      clearTimeout(timer)
      // Read once the block is over: a status line may arrive split over two chunks.
      const statuses: number[] = []
      for (const line of err.split('\n')) {
        const m = /\[doc-run\] (\d{3})/.exec(line)
        if (m) statuses.push(Number(m[1]))
        if (line.replace(/\[doc-run\] .*$/, '')) out += line.replace(/\[doc-run\] .*$/, '') + '\n'
      }
      resolve({ code, out, statuses })
    })
  })
}

function readEnv(file: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const entry of readFileSync(file, 'utf8').split('\0')) {
    const at = entry.indexOf('=')
    if (at > 0) env[entry.slice(0, at)] = entry.slice(at + 1)
  }
  return env
}

async function main() {
  const files =
    process.argv.length > 2
      ? process.argv.slice(2)
      : [
          'README.md',
          ...readdirSync('docs')
            .filter((f) => f.endsWith('.md'))
            .sort()
            .map((f) => join('docs', f))
        ]
  const home = mkdtempSync(join(tmpdir(), 'doc-commands-'))
  writeFileSync(join(home, '.curlrc'), 'write-out = "%{stderr}[doc-run] %{http_code} %{method} %{url_effective}\\n"\n')
  const envFile = join(home, 'env')
  let env: NodeJS.ProcessEnv = { ...process.env, CURL_HOME: home }
  let failed = 0
  let ran = 0
  try {
    for (const file of files) {
      for (const block of shellBlocks(file, readFileSync(file, 'utf8'))) {
        if (block.setup) {
          console.log(`-- ${block.file}:${block.line}: setup, run by the caller`)
          continue
        }
        ran++
        const started = Date.now()
        const { code, out, statuses } = await runBlock(block, env, envFile)
        const wrong = block.status
          ? statuses.at(-1) === block.status
            ? []
            : [statuses.at(-1) ?? 'none']
          : statuses.filter((s) => s < 200 || s >= 400)
        const ok = code === 0 && !wrong.length
        console.log(
          `${ok ? 'ok' : 'FAILED'} ${block.file}:${block.line} (${((Date.now() - started) / 1000).toFixed(1)} s; HTTP ${statuses.join(' ') || 'none'}${block.status ? `; expected last ${block.status}` : ''}${code !== 0 ? `; bash exit ${code}` : ''})`
        )
        if (!ok || process.env.DOC_COMMANDS_VERBOSE) {
          console.log(
            block.code
              .split('\n')
              .map((l) => `  $ ${l}`)
              .join('\n')
          )
          console.log(out.length > shown ? `${out.slice(0, shown)}\n  … (${out.length - shown} more characters)` : out)
        }
        if (ok) env = { ...readEnv(envFile), CURL_HOME: home }
        else failed++
      }
    }
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
  console.log(`doc commands: ${ran - failed} of ${ran} blocks ran as documented`)
  process.exit(failed ? 1 : 0)
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
