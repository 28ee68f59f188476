import type { TestServer } from './server.ts'

/** A browser page's answer as the settings tests read it. */
export interface Page {
  status: number
  headers: Headers
  html: string
  location: string | null
  setCookie: string[]
}

/** One request as a browser sends it: the session cookie, a urlencoded form (a field may repeat), no redirect followed. */
export async function sendPage(
  s: TestServer,
  method: string,
  path: string,
  o: { cookie?: string; form?: Record<string, string | string[]>; headers?: Record<string, string> } = {}
): Promise<Page> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) }
  if (o.cookie) headers.cookie = `records_session=${o.cookie}`
  let body: string | undefined
  if (o.form) {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(o.form)) for (const one of [v].flat()) params.append(k, one)
    body = params.toString()
    headers['content-type'] ??= 'application/x-www-form-urlencoded'
  }
  const res = await fetch(s.url + path, { method, headers, body, redirect: 'manual' })
  return {
    status: res.status,
    headers: res.headers,
    html: await res.text(),
    location: res.headers.get('location'),
    setCookie: res.headers.getSetCookie()
  }
}

/** A person signed in through the sign-in form, as a browser without JavaScript holds them: cookie, CSRF token, doors. */
export interface SignedIn {
  cookie: string
  csrf: string
  get(path: string, headers?: Record<string, string>): Promise<Page>
  /** A form of theirs: the session's CSRF token added. */
  post(path: string, form: Record<string, string | string[]>, headers?: Record<string, string>): Promise<Page>
  /** The public API with the session cookie and the session's X-CSRF-Token, as the pages' scripts call it. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
}

/** Signs a person in through /sign-in and reads the CSRF token the start page carries. */
export async function signInBrowser(
  s: TestServer,
  userName: string,
  password: string,
  tenant = 'acme'
): Promise<SignedIn> {
  const signed = await sendPage(s, 'POST', '/sign-in', { form: { tenant, userName, password, next: '' } })
  const cookie = /records_session=([^;]+)/.exec(signed.setCookie.join('\n'))?.[1]
  if (signed.status !== 303 || !cookie) throw new Error(`${userName} could not sign in (${signed.status})`)
  const home = await sendPage(s, 'GET', '/records', { cookie })
  const csrf = /name="csrf" value="([^"]+)"/.exec(home.html)?.[1]
  if (!csrf) throw new Error(`no CSRF token on ${userName}'s start page (${home.status})`)
  return {
    cookie,
    csrf,
    get: (path, headers) => sendPage(s, 'GET', path, { cookie, headers }),
    post: (path, form, headers) => sendPage(s, 'POST', path, { cookie, form: { csrf, ...form }, headers }),
    api: (method, path, body) =>
      s.request(method, path, {
        token: null,
        body,
        headers: { cookie: `records_session=${cookie}`, 'x-csrf-token': csrf }
      })
  }
}
