import t from '../helpers/tap.ts'

// The project pins Node 24 (package `node`, node_modules/.bin/node), which npm scripts run
// before the machine's own: this process is `npm test`'s, so it shows which one they ran.
t.test('the tests run on the Node the project pins (24 or later), not the machine’s', async (t) => {
  t.ok(Number(process.versions.node.split('.')[0]) >= 24, `process.version is ${process.version} (${process.execPath})`)
})
