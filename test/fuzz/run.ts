import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * `npm run fuzz -- --runs N [--seed S] [--ops REGEX] [--bound MS] [--trace]`: the spec-driven
 * fuzz test with more cases than CI runs. Flags become the FUZZ_* variables the test reads;
 * anything else goes to tap.
 */
const flags: Record<string, string> = { '--runs': 'FUZZ_RUNS', '--seed': 'FUZZ_SEED', '--ops': 'FUZZ_OPS', '--bound': 'FUZZ_BOUND_MS', '--shrink': 'FUZZ_SHRINK_MS' }
const env: Record<string, string | undefined> = { ...process.env }
const rest: string[] = []
const args = process.argv.slice(2)
for (let i = 0; i < args.length; i++) {
  const [flag, inline] = args[i].split(/=(.*)/s)
  if (flag === '--trace') env.FUZZ_TRACE = '1'
  else if (flags[flag]) {
    const value = inline ?? args[++i]
    if (value === undefined || (flag !== '--ops' && !/^\d+$/.test(value))) {
      console.error(`${flag} needs a ${flag === '--ops' ? 'regular expression' : 'whole number'}`)
      process.exit(2)
    }
    env[flags[flag]] = value
  } else rest.push(args[i])
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
console.error(`fuzzing with FUZZ_RUNS=${env.FUZZ_RUNS ?? '(default)'} FUZZ_SEED=${env.FUZZ_SEED ?? '(default)'}${env.FUZZ_OPS ? ` FUZZ_OPS=${env.FUZZ_OPS}` : ''}`)
// Through npm test's runner, which starts the embedded test PostgreSQL when needed and stops it at the end.
const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'suite', 'run.ts'), ...rest, 'test/fuzz/openapi-fuzz.test.ts'], { cwd: root, env, stdio: 'inherit' })
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
