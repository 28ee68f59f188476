import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

/** Debian's chromium package (`apt-get install -y chromium`); never a downloaded browser. */
export const chromiumPath = '/usr/bin/chromium'
const args = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync'
]

/**
 * Why the browser tests cannot run here, or false when they can. In CI a missing browser is
 * a failure (`fail` is called), elsewhere a reason to skip.
 */
export function chromiumMissing(fail: (message: string) => void): string | false {
  if (existsSync(chromiumPath)) return false
  if (process.env.CI)
    fail(
      `${chromiumPath} is missing: CI must install Debian's chromium package (apt-get install -y chromium) for the browser tests.`
    )
  return `${chromiumPath} is missing; install Debian's chromium package (apt-get install -y chromium) to run the browser tests`
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args, timeout: 20_000 })
}
