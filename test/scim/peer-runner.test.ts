/**
 * The peer-suite runners of `npm run test:scim-peers` (scripts/scim-peers/), checked
 * against small local servers rather than the SCIM provider: what they count, what they
 * extract, and that a server that answers nothing useful is a list of failures, not a crash.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { runRunscope, unsupported, type RunscopeExport } from '../../scripts/scim-peers/runscope.ts'
import { comparisons, parseProperty, runScript, substitute } from '../../scripts/scim-peers/runscope-checks.ts'
import { runMicrosoft } from '../../scripts/scim-peers/microsoft.ts'

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

/** A loopback server answering with `answer`; it records every request it got. */
async function serve(answer: (req: Seen, res: ServerResponse) => void) {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const one = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8')
      }
      seen.push(one)
      answer(one, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/scim+json', ...headers })
  res.end(JSON.stringify(body))
}

const listUrn = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
const headers = {
  Authorization: ['{{auth}}'],
  'User-Agent': ['OKTA SCIM Integration'],
  Accept: ['application/scim+json']
}

/** Four steps and a pause; the comments give each assertion's expected outcome. */
const scripted: RunscopeExport = {
  name: 'scripted',
  steps: [
    {
      step_type: 'request',
      note: 'list by filter',
      method: 'GET',
      url: '{{base}}/Users?filter=userName eq "{{name}}"',
      headers,
      assertions: [
        { source: 'response_status', comparison: 'equal_number', value: '200' }, // pass
        { source: 'response_json', comparison: 'has_value', property: 'schemas', value: listUrn }, // pass
        { source: 'response_json', comparison: 'is_a_number', property: 'totalResults', value: null }, // pass
        { source: 'response_json', comparison: 'equal', property: 'totalResults', value: '1' }, // pass: compared as text
        { source: 'response_json', comparison: 'not_empty', property: 'Resources[0].active', value: null }, // pass: false is a value
        { source: 'response_json', comparison: 'equal', property: 'Resources[0].active', value: 'false' }, // pass
        { source: 'response_json', comparison: 'equal', property: 'Resources[0].name.givenName', value: 'Bob' }, // FAIL: Ada
        { source: 'response_json', comparison: 'has_key', property: 'Resources[0]', value: 'userName' }, // pass
        { source: 'response_headers', comparison: 'equal', property: 'X-Trace', value: 'abc' }, // pass
        { source: 'response_time', comparison: 'is_less_than', value: '5000' } // pass
      ],
      variables: [
        { source: 'response_json', name: 'userId', property: 'Resources[0].id' },
        { source: 'response_json', name: 'email', property: 'Resources[0].emails[0].value' },
        { source: 'response_headers', name: 'trace', property: 'x-trace' },
        { source: 'response_json', name: 'missing', property: 'Resources[3].id' }
      ],
      scripts: [],
      before_scripts: []
    },
    { step_type: 'pause', duration: 5 },
    {
      step_type: 'request',
      note: 'read the user found',
      method: 'GET',
      url: '{{base}}/Users/{{userId}}',
      headers,
      assertions: [{ source: 'response_json', comparison: 'equal', property: 'id', value: '{{userId}}' }], // pass
      scripts: [
        'var data = JSON.parse(response.body);\nassert.equal(data.id, variables.get("userId"), "same id");\nvariables.set("fromScript", data.id + "!");\nlog("seen", data.id);'
      ] // 1 pass
    },
    {
      step_type: 'request',
      note: 'create',
      method: 'POST',
      url: '{{base}}/Users',
      headers: { ...headers, 'Content-Type': ['application/scim+json'] },
      body: '{"userName":"{{name}}","trace":"{{trace}}"}',
      assertions: [{ source: 'response_json', comparison: 'equal', property: 'userName', value: '{{name}}' }], // pass
      scripts: [
        'assert.ok(true, "first");\nassert.strictEqual(response.status, 200, "wants 200");\nassert.ok(true, "never reached");'
      ] // 1 pass, 1 FAIL, then stops
    },
    {
      step_type: 'request',
      note: 'not JSON',
      method: 'GET',
      url: '{{base}}/text',
      headers,
      assertions: [
        { source: 'response_json', comparison: 'not_empty', property: 'id', value: null }, // FAIL: not JSON
        { source: 'response_text', comparison: 'contains', value: 'not json' } // pass
      ],
      scripts: ['JSON.parse(response.body)'] // FAIL: script error
    }
  ]
}

t.test('the Runscope runner counts assertions, takes variables from responses and runs scripts', async (t) => {
  const server = await serve((req, res) => {
    const path = new URL(req.url, 'http://x')
    if (req.headers.authorization !== 'Bearer secret') return json(res, 401, { status: '401' })
    if (path.pathname === '/scim/Users' && req.method === 'GET') {
      return json(
        res,
        200,
        {
          schemas: [listUrn],
          totalResults: 1,
          itemsPerPage: 1,
          startIndex: 1,
          Resources: [
            {
              id: 'u-1',
              userName: 'ada@example.com',
              name: { givenName: 'Ada' },
              active: false,
              emails: [{ value: 'ada@example.com' }]
            }
          ]
        },
        { 'X-Trace': 'abc' }
      )
    }
    if (path.pathname === '/scim/Users/u-1') return json(res, 200, { id: 'u-1' })
    if (path.pathname === '/scim/Users' && req.method === 'POST') return json(res, 201, JSON.parse(req.body))
    res.writeHead(200, { 'content-type': 'text/plain' }).end('this is not json')
  })
  const lines: string[] = []
  const variables = new Map([
    ['base', `${server.url}/scim`],
    ['auth', 'Bearer secret'],
    ['name', 'ada@example.com']
  ])
  const outcome = await runRunscope(scripted, { variables, say: (l) => lines.push(l) })

  t.equal(outcome.passed, 9 + 2 + 2 + 1, 'every passing assertion, script assertions included')
  t.equal(
    outcome.failed,
    1 + 0 + 1 + 2,
    'the wrong given name, the failed script assert, the non-JSON body and the script error'
  )
  t.same(
    outcome.failures.map((f) => [f.where, f.assertion]),
    [
      ['[1] list by filter', 'response_json.Resources[0].name.givenName equal "Bob"'],
      ['[4] create', 'script assert.strictEqual: wants 200'],
      ['[5] not JSON', 'response_json.id not_empty'],
      ['[5] not JSON', 'script error']
    ]
  )
  t.match(outcome.failures[0].detail, 'got Ada')
  t.match(outcome.failures[0].response, /^GET \/scim\/Users\?filter=.* → 200 application\/scim\+json \{"schemas"/)
  t.match(outcome.failures[2].detail, 'not JSON: this is not json')
  t.equal(variables.get('userId'), 'u-1')
  t.equal(variables.get('email'), 'ada@example.com')
  t.equal(variables.get('trace'), 'abc', 'header names are case-insensitive')
  t.equal(variables.get('fromScript'), 'u-1!', 'a script sets variables')
  t.notOk(variables.has('missing'), 'a value that is not there leaves its variable unset')

  t.equal(server.seen.length, 4)
  t.equal(
    new URL(server.seen[0].url, 'http://x').searchParams.get('filter'),
    'userName eq "ada@example.com"',
    'the filter arrives as written, encoded'
  )
  t.equal(server.seen[0].headers['user-agent'], 'OKTA SCIM Integration', "the headers are the step's own")
  t.equal(server.seen[1].url, '/scim/Users/u-1', 'the extracted id is used by the next step')
  t.same(JSON.parse(server.seen[2].body), { userName: 'ada@example.com', trace: 'abc' }, 'the body is filled in')
  t.ok(lines.includes('    log: seen u-1'), "a script's log lines are shown")
  t.ok(
    lines.some((l) => l.startsWith('[2] pause 5 s: not waited')),
    'pauses are skipped unless asked for'
  )
})

t.test('against a server that only answers 404, every assertion fails and the run completes', async (t) => {
  const server = await serve((_req, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found'))
  const outcome = await runRunscope(scripted, {
    variables: new Map([
      ['base', server.url],
      ['auth', 'Bearer x'],
      ['name', 'n']
    ])
  })
  // Only response_time and the script's assert.ok(true) hold; the rest are about a 200 JSON answer.
  t.equal(outcome.passed, 2)
  t.equal(outcome.failed, 9 + 2 + 2 + 3)
  t.match(outcome.failures.find((f) => f.assertion === 'script error')?.detail, /JSON/)
  t.equal(server.seen[1].url, '/Users/%7B%7BuserId%7D%7D', 'an unset variable is sent as written, as Runscope did')
})

t.test('against a port nobody listens on, each request is a failure with the reason, not a crash', async (t) => {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const deadPort = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  const outcome = await runRunscope(scripted, {
    variables: new Map([
      ['base', `http://127.0.0.1:${deadPort}`],
      ['auth', 'Bearer x'],
      ['name', 'n']
    ])
  })
  t.equal(outcome.passed, 0)
  t.equal(outcome.failed, 10 + 2 + 2 + 3, 'each assertion, and each script, which is not run')
  t.ok(outcome.failures.every((f) => f.detail.includes('no response (ECONNREFUSED)')))
})

t.test(
  'an export using a step type, source or comparison the runner lacks is refused before any request',
  async (t) => {
    const odd: RunscopeExport = {
      steps: [
        { step_type: 'condition' },
        {
          step_type: 'request',
          method: 'GET',
          url: 'http://127.0.0.1:1/',
          assertions: [
            { source: 'response_xml', comparison: 'equal', value: 'x' },
            { source: 'response_json', comparison: 'is_greater_than_the_moon', property: 'a' }
          ]
        },
        {
          step_type: 'request',
          method: 'POST',
          url: 'http://127.0.0.1:1/',
          multipart_form: [{ name: 'f' }],
          auth: { auth_type: 'basic' }
        }
      ]
    }
    t.same(unsupported(odd), [
      'step 1: step type "condition"',
      'step 2: assertion source "response_xml"',
      'step 2: assertion comparison "is_greater_than_the_moon"',
      'step 3: Runscope auth helper {"auth_type":"basic"}',
      'step 3: a multipart form body'
    ])
    await t.rejects(
      runRunscope(odd, { variables: new Map() }),
      /does not implement:\n {2}step 1: step type "condition"/
    )
  }
)

t.test("comparisons, properties and templates behave as Runscope's did", async (t) => {
  t.same(parseProperty('Resources[0].name.familyName'), ['Resources', 0, 'name', 'familyName'])
  t.same(parseProperty('$.emails[1]["work value"]'), ['emails', 1, 'work value'])
  t.same(parseProperty(''), [])
  t.throws(() => parseProperty('a..b]'))
  t.ok(comparisons.equal_number(200, '200'))
  t.notOk(comparisons.equal_number('abc', '0'))
  t.ok(comparisons.equal(true, 'true'))
  t.ok(comparisons.equal(0, '0'))
  t.notOk(comparisons.equal(undefined, 'undefined'), 'a missing value equals nothing')
  t.ok(comparisons.not_empty(false, ''))
  t.ok(comparisons.not_empty(0, ''))
  t.ok(comparisons.empty([], '') && comparisons.empty(undefined, '') && comparisons.empty('', ''))
  t.ok(comparisons.contains(['a:b', 'c'], 'a:b'), 'a list contains an item')
  t.notOk(comparisons.contains(['a:b'], 'a'), 'not a part of one')
  t.ok(comparisons.contains('hello', 'ell'))
  t.ok(comparisons.has_value(['x', 1], '1'))
  t.ok(comparisons.is_a_number(3, ''))
  t.notOk(comparisons.is_a_number('3', ''), 'a numeric string is not a JSON number')
  t.ok(comparisons.is_less_than(599, '600'))
  t.notOk(comparisons.is_greater_than(undefined, '1'))
  const unresolved = new Set<string>()
  t.equal(
    substitute(
      '{{a}}-{{ b }}-{{c}}',
      new Map([
        ['a', '1'],
        ['b', '2']
      ]),
      unresolved
    ),
    '1-2-{{c}}'
  )
  t.same([...unresolved], ['c'])
  t.match(substitute('{{random_string(8)}} {{timestamp}}', new Map()), /^[A-Za-z0-9]{8} \d{10}$/)
})

t.test('a script calling an assert method the runner lacks fails loudly', async (t) => {
  const outcome = runScript('assert.closeTo(1, 1, 0)', new Map())
  t.match(outcome.error, 'assert.closeTo is not implemented')
  const chai = runScript(
    'assert("nogroups", "truthy message"); assert.isArray([]); assert.include("abc", "b")',
    new Map()
  )
  t.same(
    chai.assertions.map((a) => a.passed),
    [true, true, true]
  )
})

t.test(
  'the Microsoft runner maps /serviceConfiguration, sends the token and counts test and script failures',
  async (t) => {
    const server = await serve(
      (_req, res) => void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found')
    )
    const dir = mkdtempSync(join(tmpdir(), 'scim-peers-test-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const item = (name: string, path: string[], exec: string[]) => ({
      name,
      event: [{ listen: 'test', script: { type: 'text/javascript', exec } }],
      request: {
        auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] },
        method: 'GET',
        header: [],
        url: {
          raw: `{{Protocol}}://{{Server}}{{Port}}/${path.join('/')}`,
          protocol: '{{Protocol}}',
          host: ['{{Server}}{{Port}}'],
          path
        }
      }
    })
    const collection = {
      info: { name: 'tiny', schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json' },
      item: [
        {
          name: 'Get Token',
          item: [
            item(
              'Get Token',
              ['{{Api}}', 'Token'],
              ['pm.test("never run", function () { pm.response.to.have.status(200); });']
            )
          ]
        },
        {
          name: 'Endpoint tests',
          item: [
            item(
              'Get ServiceProviderConfig',
              ['{{Api}}', 'serviceConfiguration'],
              [
                'pm.test("Status code is 200", function () { pm.response.to.have.status(200); });',
                'pm.test("Body says Not Found", function () { pm.expect(pm.response.text()).to.include("Not Found"); });'
              ]
            ),
            item(
              'Post User',
              ['{{Api}}', 'Users'],
              ['var jsonData = pm.response.json();', 'pm.environment.set("id1", jsonData.id);']
            )
          ]
        }
      ]
    }
    const file = join(dir, 'tiny.postman_collection.json')
    writeFileSync(file, JSON.stringify(collection))
    const lines: string[] = []
    const result = await runMicrosoft({
      file,
      scimBaseUrl: `${server.url}/api/scim/v2`,
      token: 'sa_secret',
      say: (l) => lines.push(l)
    })

    t.same(
      server.seen.map((s) => s.url),
      ['/api/scim/v2/ServiceProviderConfig', '/api/scim/v2/Users'],
      'Get Token left out, the path mapped'
    )
    t.ok(
      server.seen.every((s) => s.headers.authorization === 'Bearer sa_secret'),
      'the token goes with every request'
    )
    t.equal(result.passed, 1)
    t.equal(result.failed, 2)
    t.same(
      result.failures.map((f) => [f.where, f.assertion]),
      [
        ['Endpoint tests / Get ServiceProviderConfig', 'Status code is 200'],
        ['Endpoint tests / Post User', 'test script error']
      ]
    )
    t.match(result.failures[0].response, 'GET /api/scim/v2/ServiceProviderConfig → 404 text/plain Not Found')
    t.ok(lines.some((l) => l.includes('mapped: /serviceConfiguration → /ServiceProviderConfig (1 request)')))
  }
)
