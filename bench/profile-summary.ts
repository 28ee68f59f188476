/**
 * Summarises a V8 .cpuprofile (from `npm run bench -- --cpu-prof`): self time by package
 * or project file, the top functions by self time, and the inclusive (on-stack) time of
 * functions whose name matches --focus. Times are shares of the busy (non-idle) samples.
 *
 * Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [--top 25] [--focus name1,name2] [--requests N]
 *          [--skip S] [--until S] [--timeline]
 *   --requests N also prints µs per request (N = requests the process served in the window);
 *   --skip S ignores the first S seconds (start-up, seeding), --until S every sample from second S on (one
 *   scenario's window of a run with several); --timeline prints busy % per second.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { projectRoot } from '../core/paths.ts'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: Node[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '25' },
    focus: { type: 'string' },
    requests: { type: 'string' },
    skip: { type: 'string' },
    until: { type: 'string' },
    timeline: { type: 'boolean' }
  }
})
if (!positionals[0])
  throw new Error('usage: profile-summary.ts <file.cpuprofile> [--top N] [--focus a,b] [--requests N]')
process.stdout.on('error', () => process.exit(0))
const profile: Profile = JSON.parse(readFileSync(positionals[0], 'utf8'))

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

// Time of each sample: its delta to the next sample (V8 convention: timeDeltas[i] precedes samples[i]).
// Samples before --skip seconds count for nothing.
const skipUs = Number(values.skip ?? 0) * 1e6
const untilUs = values.until === undefined ? Infinity : Number(values.until) * 1e6
const at: number[] = []
profile.timeDeltas.reduce((t, d, i) => (at[i] = t + d), 0)
const sampleUs = profile.samples.map((_, i) =>
  at[i] < skipUs || at[i] >= untilUs ? 0 : (profile.timeDeltas[i + 1] ?? 0)
)
if (values.timeline) {
  const perSecond: Array<{ busy: number; all: number }> = []
  profile.samples.forEach((id, i) => {
    const s = Math.floor(at[i] / 1e6)
    perSecond[s] ??= { busy: 0, all: 0 }
    const d = profile.timeDeltas[i + 1] ?? 0
    perSecond[s].all += d
    if (byId.get(id)!.callFrame.functionName !== '(idle)') perSecond[s].busy += d
  })
  console.log(
    'busy % per second: ' +
      perSecond.map((x, s) => `${s}:${x ? Math.round((100 * x.busy) / (x.all || 1)) : 0}`).join(' ') +
      '\n'
  )
}
const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + sampleUs[i]))

const special = (n: Node) => ['(idle)', '(program)', '(garbage collector)', '(root)'].includes(n.callFrame.functionName)
function group(n: Node): string {
  const { url, functionName } = n.callFrame
  if (!url) return special(n) ? functionName : '(native / builtins)'
  if (url.startsWith('node:')) return 'node: ' + url.slice(5).split('/')[0]
  const path = url.replace(/^file:\/\//, '')
  const nm = path.lastIndexOf('/node_modules/')
  if (nm !== -1) {
    const rest = path.slice(nm + 14).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  return path.startsWith(projectRoot) ? path.slice(projectRoot.length + 1) : path
}
const label = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${group(n)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`

let idle = 0
let total = 0
const groups = new Map<string, number>()
const functions = new Map<string, number>()
for (const [id, us] of selfUs) {
  const n = byId.get(id)!
  total += us
  if (n.callFrame.functionName === '(idle)') {
    idle += us
    continue
  }
  groups.set(group(n), (groups.get(group(n)) ?? 0) + us)
  functions.set(label(n), (functions.get(label(n)) ?? 0) + us)
}
const busy = total - idle
const requests = values.requests ? Number(values.requests) : undefined
const show = (us: number) =>
  `${((100 * us) / busy).toFixed(1).padStart(5)} %${requests ? `  ${(us / requests).toFixed(1).padStart(7)} µs/req` : ''}`

console.log(
  `profile: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${((100 * busy) / total).toFixed(0)} %)${requests ? `, ${(busy / requests).toFixed(0)} µs busy per request` : ''}\n`
)
console.log('self time by package / project file:')
for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
  console.log(`  ${show(us)}  ${g}`)
console.log('\ntop functions by self time:')
for (const [f, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
  console.log(`  ${show(us)}  ${f}`)

if (values.focus) {
  console.log('\ninclusive (synchronous, on-stack) time:')
  for (const name of values.focus.split(',')) {
    const re = new RegExp(name)
    let us = 0
    profile.samples.forEach((id, i) => {
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const n = byId.get(cur)!
        if (re.test(label(n))) {
          us += sampleUs[i]
          break
        }
      }
    })
    console.log(`  ${show(us)}  ${name}`)
  }
}
