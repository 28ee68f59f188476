import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/**
 * Passwords are hashed with scrypt, a memory-hard function built into Node (no native
 * add-on to build): N=2^15, r=8, p=1 takes 32 MiB and ~50-100 ms per hash, so a
 * leaked table is expensive to attack with GPUs. Stored as
 * `scrypt$<logN>$<r>$<p>$<salt b64>$<hash b64>` so the cost can rise later.
 */
const current = { logN: 15, r: 8, p: 1, keyLength: 32 }

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCb(password.normalize('NFKC'), salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)))
  )
}

const optionsFor = (logN: number, r: number, p: number): ScryptOptions => ({
  N: 2 ** logN,
  r,
  p,
  maxmem: 256 * 2 ** logN * r + 1024 * 1024
})

/** Minimum password rules: long enough to matter, short enough not to be a DoS vector. */
export function passwordProblem(password: string): string | undefined {
  if (typeof password !== 'string' || password.length < 12) return 'must be at least 12 characters long'
  if (password.length > 1024) return 'must be at most 1024 characters long'
  return undefined
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const { logN, r, p, keyLength } = current
  const key = await scrypt(password, salt, keyLength, optionsFor(logN, r, p))
  return ['scrypt', logN, r, p, salt.toString('base64'), key.toString('base64')].join('$')
}

/** Compares in constant time; an unknown user is checked against a dummy hash so timing does not reveal which names exist. */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = (stored ?? dummy).split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [, logN, r, p, salt, hash] = parts
  const expected = Buffer.from(hash, 'base64')
  const key = await scrypt(
    password,
    Buffer.from(salt, 'base64'),
    expected.length,
    optionsFor(Number(logN), Number(r), Number(p))
  )
  return timingSafeEqual(key, expected) && stored !== null && stored !== undefined
}

const dummy = `scrypt$${current.logN}$${current.r}$${current.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`
