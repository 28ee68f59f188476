import { PassThrough } from 'node:stream'
import t from '../helpers/tap.ts'
import { ZipWriter } from '../../plugins/exports/zip.ts'

/** Settles with the outcome of p, or says it is still pending after ms. */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      () => 'resolved',
      (err: Error) => `rejected: ${err.message}`
    ),
    new Promise<string>((r) => setTimeout(() => r('still pending'), ms).unref())
  ])

t.test('a streamed part whose output closed before its end fails the export instead of hanging', async (t) => {
  const out = new PassThrough()
  out.resume()
  const zip = new ZipWriter(out, new Date('2026-11-26T00:00:00Z'))
  const sheet = zip.stream('xl/worksheets/sheet1.xml')
  await sheet.write('<row/>'.repeat(1000))
  out.destroy()
  await new Promise((r) => setImmediate(r))
  t.match(await within(sheet.end(), 2000), /^rejected: /)
})

t.test('a streamed part ends with its descriptor when the output stays open', async (t) => {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  const zip = new ZipWriter(out, new Date('2026-11-26T00:00:00Z'))
  const sheet = zip.stream('xl/worksheets/sheet1.xml')
  await sheet.write('<row/>'.repeat(1000))
  t.equal(await within(sheet.end(), 2000), 'resolved')
  await zip.finish()
  const bytes = Buffer.concat(chunks)
  t.equal(bytes.readUInt32LE(0), 0x04034b50, 'a local file header first')
  t.ok(bytes.includes(Buffer.from([0x50, 0x4b, 0x07, 0x08])), 'a data descriptor after the part')
  t.equal(bytes.readUInt32LE(bytes.length - 22), 0x06054b50, 'the end of central directory last')
})
