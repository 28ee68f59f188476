#!/usr/bin/env node
// The `records` admin CLI. Loads the TypeScript sources through tsx, like `npm start`,
// and hands core's CLI the plugins, whose commands (e.g. `token create`) join core's.
import { register } from 'tsx/esm/api'

register()
const { runCli } = await import('../core/cli/index.ts')
const { plugins } = await import('../plugins/index.ts')
process.exit(await runCli(process.argv.slice(2), plugins))
