import { PassThrough } from 'node:stream'
import t from '../helpers/tap.ts'
import { crc32, inflateRawSync } from 'node:zlib'
import { crc32Combine, deflatedSegment, deflatedSegmentSync, ZipWriter } from '../../plugins/exports/zip.ts'

/** Settles with the outcome of p, or says it is still pending after ms. */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      () => 'resolved',
      (err: Error) => `rejected: ${err.message}`
    ),
    new Promise<string>((r) => setTimeout(() => r('still pending'), ms).unref())
  ])

t.test('a deflated part whose output closed before its end fails the export instead of hanging', async (t) => {
  const out = new PassThrough()
  out.resume()
  const zip = new ZipWriter(out, new Date('2026-11-26T00:00:00Z'))
  const sheet = zip.deflated('xl/worksheets/sheet1.xml')
  await sheet.write(deflatedSegmentSync(Buffer.from('<row/>'.repeat(1000))))
  out.destroy()
  await new Promise((r) => setImmediate(r))
  t.match(await within(sheet.end(), 2000), /^rejected: /)
})

t.test('a deflated part ends with its descriptor when the output stays open', async (t) => {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  const zip = new ZipWriter(out, new Date('2026-11-26T00:00:00Z'))
  const sheet = zip.deflated('xl/worksheets/sheet1.xml')
  await sheet.write(deflatedSegmentSync(Buffer.from('<row/>'.repeat(1000))))
  t.equal(await within(sheet.end(), 2000), 'resolved')
  await zip.finish()
  const bytes = Buffer.concat(chunks)
  t.equal(bytes.readUInt32LE(0), 0x04034b50, 'a local file header first')
  t.ok(bytes.includes(Buffer.from([0x50, 0x4b, 0x07, 0x08])), 'a data descriptor after the part')
  t.equal(bytes.readUInt32LE(bytes.length - 22), 0x06054b50, 'the end of central directory last')
})

t.test('sync-flushed deflate segments follow one another into one part, its CRC combined from theirs', async (t) => {
  const parts = [Buffer.from('<row r="2">a</row>'.repeat(5000)), Buffer.alloc(0), Buffer.from('tail 🦺'.repeat(7))]
  const whole = Buffer.concat(parts)
  t.equal(crc32Combine(crc32(parts[0]), crc32(parts[2]), parts[2].length), crc32(Buffer.concat([parts[0], parts[2]])))
  t.equal(crc32Combine(0, crc32(whole), whole.length), crc32(whole), 'from the CRC of nothing')
  const out = new PassThrough()
  const bytes: Buffer[] = []
  out.on('data', (b: Buffer) => bytes.push(b))
  const zip = new ZipWriter(out, new Date(Date.UTC(2026, 10, 26)))
  const part = zip.deflated('part.xml')
  await part.write(await deflatedSegment(parts[0]))
  await part.write(deflatedSegmentSync(parts[1]))
  await part.write(deflatedSegmentSync(parts[2]))
  await part.end()
  await zip.finish()
  // One part: its local header (30 bytes and the name), the deflated data, a 16-byte descriptor, then the central directory.
  const zipped = Buffer.concat(bytes)
  const central = zipped.readUInt32LE(zipped.length - 22 + 16)
  const descriptor = zipped.subarray(central - 16, central)
  t.ok(inflateRawSync(zipped.subarray(30 + 'part.xml'.length, central - 16)).equals(whole), 'the part inflates whole')
  t.same(
    [descriptor.readUInt32LE(0), descriptor.readUInt32LE(4), descriptor.readUInt32LE(12)],
    [0x08074b50, crc32(whole), whole.length],
    'its descriptor holds the CRC and size of the whole'
  )
})
