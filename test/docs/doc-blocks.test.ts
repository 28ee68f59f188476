import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { shellBlocks } from '../../scripts/doc-commands.ts'

/**
 * The smoke test (.ci/smoke-embedded.sh) runs every sh block of the README and docs/
 * against a started service; this catches, in seconds, a block that could not run as
 * written: a placeholder or optional-argument syntax where a value belongs.
 */
const files = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f))
]
const blocks = files.flatMap((f) => shellBlocks(f, readFileSync(f, 'utf8')))

t.test('the fence attributes are read: setup blocks, expected statuses, and the code between the fences', async (t) => {
  const md = [
    '# x',
    '```sh setup',
    'npm ci && npm start',
    '```',
    'text',
    '```sh status=400',
    'curl -s $B/x',
    'echo done',
    '```',
    '```json',
    '{}',
    '```'
  ].join('\n')
  t.same(shellBlocks('x.md', md), [
    { file: 'x.md', line: 3, code: 'npm ci && npm start', setup: true },
    { file: 'x.md', line: 7, code: 'curl -s $B/x\necho done', setup: false, status: 400 }
  ])
})

t.test(
  'the README gives exactly two set-up commands: the service on its embedded default, and the tests',
  async (t) => {
    t.same(
      blocks.filter((b) => b.setup).map((b) => `${b.file}: ${b.code}`),
      ['README.md: npm ci && npm start', 'README.md: npm ci && npm test']
    )
  }
)

t.test('no documented command holds a placeholder instead of a value', async (t) => {
  for (const b of blocks.filter((b) => !b.setup)) {
    const code = b.code.replace(/^\s*#.*$/gm, '')
    t.notMatch(code, /=\.\.\.|<[a-z-]+>|\s\[--/, `${b.file}:${b.line} runs as written`)
  }
  t.ok(blocks.length >= 8, `${blocks.length} blocks found`)
})

t.test(
  'a URL with brackets in a curl command is quoted and sent with -g, so curl does not read them as a glob',
  async (t) => {
    for (const b of blocks) {
      for (const line of b.code.split('\n').filter((l) => /\bcurl\b/.test(l) && /\?[^ ]*\[/.test(l)))
        t.match(line, / -g /, `${b.file}:${b.line}: ${line.slice(0, 80)}`)
    }
  }
)
