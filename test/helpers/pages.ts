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
