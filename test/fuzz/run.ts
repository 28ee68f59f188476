import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * `npm run fuzz -- --runs N [--seed S] [--ops REGEX] [--bound MS] [--trace] [--suite openapi,graphql,scim]`:
 * the fuzz tests (OpenAPI, GraphQL, SCIM; all three unless --suite names some) with more
 * cases than CI runs. Flags become the FUZZ_* variables the tests read; anything else goes to tap.
 */
const flags: Record<string, string> = {
  '--runs': 'FUZZ_RUNS',
  '--seed': 'FUZZ_SEED',
  '--ops': 'FUZZ_OPS',
  '--bound': 'FUZZ_BOUND_MS',
  '--shrink': 'FUZZ_SHRINK_MS'
}
const env: Record<string, string | undefined> = { ...process.env }
const rest: string[] = []
const suites: Record<string, string> = {
  openapi: 'test/fuzz/openapi-fuzz.test.ts',
  graphql: 'test/fuzz/graphql-fuzz.test.ts',
  scim: 'test/fuzz/scim-fuzz.test.ts'
}
let chosen = Object.keys(suites)
const args = process.argv.slice(2)
for (let i = 0; i < args.length; i++) {
  const [flag, inline] = args[i].split(/=(.*)/s)
  if (flag === '--trace') env.FUZZ_TRACE = '1'
  else if (flag === '--suite') {
    chosen = (inline ?? args[++i] ?? '').split(',').filter(Boolean)
    if (!chosen.length || chosen.some((s) => !suites[s])) {
      console.error(`--suite takes a comma-separated list of ${Object.keys(suites).join(', ')}`)
      process.exit(2)
    }
  } else if (flags[flag]) {
    const value = inline ?? args[++i]
    if (value === undefined || (flag !== '--ops' && !/^\d+$/.test(value))) {
      console.error(`${flag} needs a ${flag === '--ops' ? 'regular expression' : 'whole number'}`)
      process.exit(2)
    }
    env[flags[flag]] = value
  } else rest.push(args[i])
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
console.error(
  `fuzzing ${chosen.join(', ')} with FUZZ_RUNS=${env.FUZZ_RUNS ?? '(default)'} FUZZ_SEED=${env.FUZZ_SEED ?? '(default)'}${env.FUZZ_OPS ? ` FUZZ_OPS=${env.FUZZ_OPS}` : ''}`
)
// Through npm test's runner, which starts the embedded test PostgreSQL when needed and stops it at the end.
const child = spawn(
  process.execPath,
  ['--import', 'tsx', join(root, 'test', 'suite', 'run.ts'), ...rest, ...chosen.map((s) => suites[s])],
  { cwd: root, env, stdio: 'inherit' }
)
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
