import { runCli } from '../../core/cli/index.ts'
import { plugins } from '../../plugins/index.ts'

/**
 * Runs the `records` CLI in this process, as bin/records.js does, with `config` on top of the test configuration and
 * `input` as its standard input: the exit code and what it wrote.
 */
export async function records(
  args: string[],
  o: { config?: Record<string, unknown>; input?: string } = {}
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, plugins, {
    out: (s) => void (stdout += s),
    err: (s) => void (stderr += s),
    input: async () => o.input ?? '',
    config: o.config
  })
  return { code, stdout, stderr }
}
