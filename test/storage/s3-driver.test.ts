import { createHash, randomBytes, randomUUID } from 'node:crypto'
import t from '../helpers/tap.ts'
import { createS3Driver } from '../../core/storage/s3.ts'
import { startS3 } from '../helpers/s3.ts'

// One real S3-compatible server (s3rver) for the file; every test uses its own keys.
const s3 = await startS3()
const driver = createS3Driver(s3.config)
t.teardown(async () => {
  await driver.close?.()
  await s3.close()
})

const newKey = () => `acme/${randomUUID()}/${randomUUID()}`
const sha = (b: Buffer) => createHash('sha256').update(b).digest()
const inAMinute = () => new Date(Date.now() + 60_000)
const put = (url: string, headers: Record<string, string>, body: Buffer) =>
  fetch(url, { method: 'PUT', headers, body: new Uint8Array(body) })
/** The URL with the character at `at` changed. */
const flip = (url: string, at: number) => url.slice(0, at) + (url[at] === '0' ? '1' : '0') + url.slice(at + 1)

async function uploaded(body: Buffer, contentType = 'application/pdf') {
  const key = newKey()
  const upload = await driver.signUpload({ key, contentType, size: body.length, expiresAt: inAMinute() })
  const res = await put(upload.url, upload.headers, body)
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${await res.text()}`)
  return key
}

t.test(
  'an upload to the signed PUT URL with exactly the returned headers is stored; stat gives its size and sha256 its hash',
  async (t) => {
    // Several hundred KiB, so sha256 sees the object in many chunks.
    const body = randomBytes(700 * 1024 + 13)
    const key = newKey()
    const expiresAt = new Date(Date.now() + 900_000)
    const upload = await driver.signUpload({
      key,
      contentType: 'application/pdf',
      size: body.length,
      sha256: sha(body),
      expiresAt
    })
    t.equal(upload.method, 'PUT')
    t.same(
      upload.headers,
      { 'content-type': 'application/pdf' },
      'the client sends only the content type (its HTTP client adds the length)'
    )
    t.ok(Math.abs(Date.parse(upload.expiresAt) - expiresAt.getTime()) <= 1000, 'expires when asked, to the second')

    const url = new URL(upload.url)
    t.equal(url.origin, s3.endpoint)
    t.equal(url.pathname, `/${s3.bucket}/${key}`, 'path-style')
    const q = url.searchParams
    t.equal(
      q.get('X-Amz-SignedHeaders'),
      'content-length;content-type;host',
      'type and size are part of the signature (real S3 enforces them)'
    )
    t.equal(q.get('X-Amz-Credential')?.split('/')[0], 'S3RVER')
    t.equal(
      q.get('x-amz-checksum-sha256'),
      sha(body).toString('base64'),
      'the declared checksum is signed into the URL'
    )
    t.equal(q.get('x-amz-checksum-crc32'), null, 'no checksum of an empty body is signed in by the SDK')
    t.equal(q.get('x-amz-sdk-checksum-algorithm'), null)

    const res = await put(upload.url, upload.headers, body)
    t.equal(res.status, 200, await res.text())
    t.same(await driver.stat(key), { size: body.length })
    t.same(await driver.sha256(key), sha(body))
  }
)

t.test('a download from the signed GET URL returns the bytes with the file name in Content-Disposition', async (t) => {
  const body = Buffer.from('%PDF-1.4\n% Inspection of bay 4\n%%EOF\n')
  const key = await uploaded(body)
  const names: Array<[string, string]> = [
    ['report.pdf', `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`],
    [
      'Prüfbericht – Halle 4.pdf',
      `attachment; filename="Pr_fbericht _ Halle 4.pdf"; filename*=UTF-8''Pr%C3%BCfbericht%20%E2%80%93%20Halle%204.pdf`
    ],
    [
      'say "hi" (draft).pdf',
      `attachment; filename="say _hi_ (draft).pdf"; filename*=UTF-8''say%20%22hi%22%20%28draft%29.pdf`
    ],
    ["O'Brien's notes.pdf", `attachment; filename="O'Brien's notes.pdf"; filename*=UTF-8''O%27Brien%27s%20notes.pdf`],
    [
      'a\r\nSet-Cookie: x=1.pdf',
      `attachment; filename="a__Set-Cookie: x=1.pdf"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D1.pdf`
    ]
  ]
  for (const [fileName, disposition] of names) {
    const download = await driver.signDownload({
      key,
      contentType: 'application/pdf',
      fileName,
      expiresAt: inAMinute()
    })
    t.match(download, { method: 'GET', headers: {} })
    const res = await fetch(download.url)
    t.equal(res.status, 200, fileName)
    t.same(Buffer.from(await res.arrayBuffer()), body, 'the same bytes come back')
    t.equal(res.headers.get('content-type'), 'application/pdf')
    t.equal(res.headers.get('content-disposition'), disposition, JSON.stringify(fileName))
    t.equal(res.headers.get('set-cookie'), null, 'no header injection')
    const encoded = disposition.split("filename*=UTF-8''")[1]
    t.equal(decodeURIComponent(encoded), fileName, 'filename* carries the exact name')
  }
})

t.test('an expired upload or download URL is refused by the server', async (t) => {
  const key = await uploaded(Buffer.from('kept'), 'text/plain')
  const other = newKey()
  // A past expiry still gets the shortest URL SigV4 allows: one second.
  const download = await driver.signDownload({
    key,
    contentType: 'text/plain',
    fileName: 'a.txt',
    expiresAt: new Date(Date.now() - 5000)
  })
  const upload = await driver.signUpload({
    key: other,
    contentType: 'text/plain',
    size: 4,
    expiresAt: new Date(Date.now() - 5000)
  })
  t.equal(new URL(download.url).searchParams.get('X-Amz-Expires'), '1')
  const until = Math.max(Date.parse(download.expiresAt), Date.parse(upload.expiresAt)) + 250
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now())))

  const got = await fetch(download.url)
  t.equal(got.status, 403)
  t.match(await got.text(), /<Code>AccessDenied<\/Code><Message>Request has expired/)
  const sent = await put(upload.url, upload.headers, Buffer.from('late'))
  t.equal(sent.status, 403)
  t.match(await sent.text(), /Request has expired/)
  t.equal(await driver.stat(other), undefined, 'nothing was stored')
})

t.test('a URL never outlives the week SigV4 allows', async (t) => {
  const download = await driver.signDownload({
    key: newKey(),
    contentType: 'text/plain',
    fileName: 'a.txt',
    expiresAt: new Date(Date.now() + 30 * 86_400_000)
  })
  t.equal(new URL(download.url).searchParams.get('X-Amz-Expires'), '604800')
  t.ok(Date.parse(download.expiresAt) <= Date.now() + 604_800_000)
})

t.test(
  'a tampered download URL: s3rver refuses another access key and serves no other object, but does not check the signature',
  async (t) => {
    const key = await uploaded(Buffer.from('secret'), 'text/plain')
    const { url } = await driver.signDownload({
      key,
      contentType: 'text/plain',
      fileName: 'a.txt',
      expiresAt: inAMinute()
    })
    t.equal((await fetch(url)).status, 200, 'the URL as signed works')

    const otherAccessKey = url.replace('X-Amz-Credential=S3RVER', 'X-Amz-Credential=S3RVEX')
    const refused = await fetch(otherAccessKey)
    t.equal(refused.status, 403)
    t.match(await refused.text(), /InvalidAccessKeyId/)

    const keyEnd = url.indexOf('?') - 1
    const otherKey = await fetch(flip(url, keyEnd))
    t.equal(otherKey.status, 404, 'another key: no such object here (real S3: 403 SignatureDoesNotMatch)')
    await otherKey.arrayBuffer()

    // s3rver 3.7.1 parses SigV4 query parameters and checks expiry, but never computes the
    // signature ("Signature version 4 calculation is unimplemented" in its source), so a changed
    // signature is still served. Real S3 answers 403 SignatureDoesNotMatch. Should s3rver start
    // to verify signatures, this assertion fails and should become 403.
    const signatureAt = url.indexOf('X-Amz-Signature=') + 'X-Amz-Signature='.length
    const otherSignature = await fetch(flip(url, signatureAt))
    t.equal(otherSignature.status, 200, 's3rver does not verify SigV4 signatures')
    t.equal(await otherSignature.text(), 'secret')
  }
)

t.test(
  'an upload with another content type or size than signed: s3rver stores it, so the platform checks the stored size itself',
  async (t) => {
    const body = Buffer.from('exactly these bytes')
    const key = newKey()
    const upload = await driver.signUpload({
      key,
      contentType: 'application/pdf',
      size: body.length,
      expiresAt: inAMinute()
    })
    t.match(
      new URL(upload.url).searchParams.get('X-Amz-SignedHeaders'),
      /content-length;content-type/,
      'real S3 refuses both with 403 SignatureDoesNotMatch'
    )

    // s3rver does not compute SigV4 signatures, so the signed headers are not enforced by it.
    const otherType = await put(upload.url, { 'content-type': 'text/html' }, body)
    t.equal(otherType.status, 200, 's3rver accepts another content type')
    const download = await driver.signDownload({
      key,
      contentType: 'application/pdf',
      fileName: 'a.pdf',
      expiresAt: inAMinute()
    })
    const res = await fetch(download.url)
    t.equal(res.headers.get('content-type'), 'application/pdf', 'downloads carry the signed type whatever was uploaded')
    await res.arrayBuffer()

    const shorter = await put(upload.url, upload.headers, body.subarray(0, 7))
    t.equal(shorter.status, 200, 's3rver accepts another size')
    t.same(
      await driver.stat(key),
      { size: 7 },
      'stat shows the size actually stored, which the platform compares with the declared one'
    )
  }
)

t.test('bytes that differ from the declared checksum are stored by s3rver, and sha256 tells them apart', async (t) => {
  const declared = Buffer.from('the declared content')
  const actual = Buffer.from('the uploaded content')
  const key = newKey()
  const upload = await driver.signUpload({
    key,
    contentType: 'text/plain',
    size: declared.length,
    sha256: sha(declared),
    expiresAt: inAMinute()
  })
  t.same(
    upload.headers,
    { 'content-type': 'text/plain' },
    'the checksum is in the URL, not a header the client must send'
  )
  const res = await put(upload.url, upload.headers, actual)
  t.equal(res.status, 200, 's3rver (like real S3 for a checksum in the query string) does not check it')
  t.notSame(await driver.sha256(key), sha(declared))
  t.same(await driver.sha256(key), sha(actual))
})

t.test('stat of a missing key is undefined', async (t) => {
  t.equal(await driver.stat(newKey()), undefined)
})

t.test('delete removes an object, and deleting it again is harmless', async (t) => {
  const key = await uploaded(Buffer.from('to be removed'), 'text/plain')
  t.same(await driver.stat(key), { size: 13 })
  await driver.delete(key)
  t.equal(await driver.stat(key), undefined)
  await t.resolves(driver.delete(key), 'a second delete does not fail')
  await t.resolves(driver.delete(newKey()), 'nor does deleting a key never written')
})

t.test('signed URLs name the public endpoint when one is set, while the service keeps its own', async (t) => {
  const publicEndpoint = 'https://files.example.test'
  const outside = createS3Driver({ ...s3.config, publicEndpoint })
  t.teardown(() => outside.close?.())
  const key = await uploaded(Buffer.from('both ways'), 'text/plain')
  const download = await outside.signDownload({
    key,
    contentType: 'text/plain',
    fileName: 'a.txt',
    expiresAt: inAMinute()
  })
  const upload = await outside.signUpload({ key: newKey(), contentType: 'text/plain', size: 1, expiresAt: inAMinute() })
  t.equal(new URL(download.url).origin, publicEndpoint)
  t.equal(new URL(upload.url).origin, publicEndpoint)
  t.equal(new URL(download.url).pathname, `/${s3.bucket}/${key}`)
  t.same(await outside.stat(key), { size: 9 }, 'reads go to the internal endpoint')
})

t.test('credentials are both given or both left to the default chain', async (t) => {
  t.throws(() => createS3Driver({ ...s3.config, secretAccessKey: null }), /accessKeyId and secretAccessKey/)
  const fromChain = createS3Driver({ ...s3.config, accessKeyId: null, secretAccessKey: null })
  t.equal(fromChain.name, 's3')
  await fromChain.close?.()
})
