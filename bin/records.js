#!/usr/bin/env node
// The `records` admin CLI. Loads the TypeScript sources through tsx, like `npm start`.
import { register } from 'tsx/esm/api'

register()
await import('../core/cli/index.ts')
