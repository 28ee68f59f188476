/**
 * Microsoft's SCIM reference Postman collection (from the SCIMReferenceCode repository),
 * run with newman as a library against a SCIM base URL. The file is read, never changed;
 * what is adapted is adapted in memory and said in the report's notes:
 * - the URL variables (`{{Protocol}}://{{Server}}{{Port}}/{{Api}}/…`) name this instance;
 * - bearer auth sits at collection level, and the requests that carried their own
 *   `Bearer {{token}}` inherit it, so one minted token is sent everywhere;
 * - the "Get Token" folder is left out: it asks the reference server's own development
 *   endpoint (`GET /Token` with body "SecureLogin") for the token, which is not SCIM;
 * - `/serviceConfiguration`, the reference server's route, is mapped to RFC 7644's
 *   `/ServiceProviderConfig`.
 */
import { readFileSync } from 'node:fs'
import newman, { type NewmanRunExecution, type NewmanRunOptions } from 'newman'
import { microsoftFile } from './files.ts'
import { excerpt, showFailure, type Failure, type Say, type SuiteResult } from './results.ts'

/* The collection as JSON: only the fields adapted here are typed. */
interface PostmanUrl {
  raw?: string
  path?: string[] | string
}
interface PostmanItem {
  name: string
  item?: PostmanItem[]
  request?: { auth?: { type: string; bearer?: Array<{ key: string; value: string }> }; url?: PostmanUrl | string }
}
interface PostmanCollection {
  info: { name: string }
  item: PostmanItem[]
  auth?: unknown
}

const walk = (items: PostmanItem[], visit: (item: PostmanItem) => void) => {
  for (const item of items) {
    if (item.item) walk(item.item, visit)
    else visit(item)
  }
}

/** An item as newman's events pass it (its typings leave the listeners' arguments untyped). */
interface EventItem {
  name?: string
  parent?: () => EventItem | undefined
}

/** The collection as newman should run it here (see the module comment); `notes` say what changed. */
export function adaptCollection(collection: PostmanCollection): { collection: PostmanCollection; notes: string[] } {
  const adapted = structuredClone(collection)
  const notes: string[] = []
  const tokenFolder = adapted.item.findIndex((i) => i.name === 'Get Token')
  if (tokenFolder >= 0) {
    adapted.item.splice(tokenFolder, 1)
    notes.push(
      'left out: folder "Get Token" (GET /Token with body "SecureLogin", the reference server\'s own token endpoint); the token is set at collection level instead'
    )
  }
  adapted.auth = { type: 'bearer', bearer: [{ key: 'token', value: '{{token}}', type: 'string' }] }
  let inherited = 0
  let mapped = 0
  walk(adapted.item, (item) => {
    const request = item.request
    if (!request) return
    if (
      request.auth?.type === 'bearer' &&
      request.auth.bearer?.every((b) => b.key !== 'token' || b.value === '{{token}}')
    ) {
      delete request.auth
      inherited++
    }
    const url = request.url
    // Postman and newman send url.path, not url.raw (the text Postman shows): say where they differ.
    if (url && typeof url === 'object' && Array.isArray(url.path) && url.raw) {
      const [shownPath, sentPath] = [
        url.raw.replace(/^[^:]+:\/\/[^/]+/, '').replace(/[?#].*$/, ''),
        `/${url.path.join('/')}`
      ]
      if (shownPath !== sentPath)
        notes.push(`as written: "${item.name}" sends ${sentPath} (its url.path), though its url.raw reads ${shownPath}`)
    }
    if (url && typeof url === 'object' && Array.isArray(url.path) && url.path.at(-1) === 'serviceConfiguration') {
      url.path[url.path.length - 1] = 'ServiceProviderConfig'
      if (url.raw) url.raw = url.raw.replace(/\/serviceConfiguration(?=$|[?#])/, '/ServiceProviderConfig')
      mapped++
    } else if (typeof url === 'string' && /\/serviceConfiguration(?=$|[?#])/.test(url)) {
      request.url = url.replace(/\/serviceConfiguration(?=$|[?#])/, '/ServiceProviderConfig')
      mapped++
    }
  })
  notes.push(`bearer auth at collection level; ${inherited} requests that sent their own "Bearer {{token}}" inherit it`)
  // A later version of the file without the route would make this mapping silently do nothing.
  if (!mapped)
    throw new Error(
      `${microsoftFile}: no request ends in /serviceConfiguration any more; check what the collection calls the ServiceProviderConfig endpoint`
    )
  notes.push(`mapped: /serviceConfiguration → /ServiceProviderConfig (${mapped} request${mapped === 1 ? '' : 's'})`)
  return { collection: adapted, notes }
}

/** Runs the collection; every pm.test counts, and so does each script error and each request that got no response. */
export async function runMicrosoft(options: {
  file: string
  scimBaseUrl: string
  token: string
  say: Say
}): Promise<SuiteResult> {
  const { say } = options
  const { collection, notes } = adaptCollection(JSON.parse(readFileSync(options.file, 'utf8')))
  const base = new URL(options.scimBaseUrl)
  const environment = {
    name: 'scim-peers',
    values: [
      { key: 'Protocol', value: base.protocol.replace(/:$/, ''), enabled: true },
      { key: 'Server', value: base.hostname, enabled: true },
      { key: 'Port', value: base.port ? `:${base.port}` : '', enabled: true },
      { key: 'Api', value: base.pathname.replace(/^\/+|\/+$/g, ''), enabled: true },
      { key: 'token', value: options.token, enabled: true }
    ]
  }
  notes.unshift(
    `environment: Protocol=${environment.values[0].value}, Server=${environment.values[1].value}, Port=${environment.values[2].value}, Api=${environment.values[3].value}, token=<a service-account token with the scim scope>`
  )
  for (const line of notes) say(`note: ${line}`)

  const result: SuiteResult = {
    suite: `Microsoft (${collection.info.name})`,
    passed: 0,
    failed: 0,
    failures: [],
    notes
  }
  let current: { where: string; passed: number; failures: Failure[]; response: string; status: string } | undefined
  const finishItem = () => {
    if (!current) return
    say(`${current.where}: ${current.status}: ${current.passed} passed, ${current.failures.length} failed`)
    if (current.failures.length) say(`    response: ${current.response}`)
    for (const f of current.failures) showFailure(say, { ...f, response: undefined })
    result.passed += current.passed
    result.failed += current.failures.length
    result.failures.push(...current.failures)
    current = undefined
  }
  const folderOf = (item: EventItem) => {
    const parent = typeof item?.parent === 'function' ? item.parent() : undefined
    return parent && parent.name && parent !== item && typeof parent.parent === 'function' && parent.parent()
      ? `${parent.name} / `
      : ''
  }
  const fail = (assertion: string, detail: string) =>
    current?.failures.push({ where: current.where, assertion, detail, response: current.response })

  await new Promise<void>((resolve, reject) => {
    newman
      .run(
        {
          collection: collection as NewmanRunOptions['collection'],
          environment: environment,
          reporters: [],
          timeoutRequest: 30_000,
          color: 'off'
        },
        (err) => (err ? reject(err) : resolve())
      )
      .on('beforeItem', (_err, args: { item: EventItem & { name: string } }) => {
        finishItem()
        current = {
          where: `${folderOf(args.item)}${args.item.name}`,
          passed: 0,
          failures: [],
          response: '(no request sent)',
          status: '(no request sent)'
        }
      })
      .on(
        'request',
        (err, args: { request?: NewmanRunExecution['request']; response: NewmanRunExecution['response'] }) => {
          if (!current) return
          const method = args.request?.method ?? '?'
          const path = args.request?.url
            ? `${args.request.url.getPath()}${args.request.url.getQueryString() ? `?${args.request.url.getQueryString()}` : ''}`
            : '?'
          if (err) {
            current.status = `${method} ${path} → no response (${err.code ?? err.message})`
            current.response = current.status
            fail('request error', err.message)
            return
          }
          const res = args.response
          current.status = `${method} ${path} → ${res.code} in ${res.responseTime} ms`
          current.response = `${method} ${path} → ${res.code} ${res.headers.get('content-type') ?? '(no content type)'} ${excerpt(res.text() ?? '') || '(empty body)'}`
        }
      )
      .on('assertion', (err, args: { assertion: string; skipped?: boolean }) => {
        if (!current || args.skipped) return
        if (err) fail(args.assertion, err.message)
        else current.passed++
      })
      .on('script', (err, args: { event?: { listen?: string } }) => {
        if (err) fail(`${args.event?.listen ?? ''} script error`.trim(), `${err.name ?? 'Error'}: ${err.message}`)
      })
  })
  finishItem()
  return result
}
