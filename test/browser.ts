import { type BrowserContext, chromium } from "playwright-core";

/** Debian's Chromium (`apt-get install chromium`); .ci/run installs it. No browser is downloaded. */
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Headless, and nothing reaching out to the network (this machine's network is closed). */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Chromium on the fresh profile folder `profile`; `options` add to the context's (a time zone, a viewport). */
export function openBrowser(
  profile: string,
  options: Parameters<typeof chromium.launchPersistentContext>[1] = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
    ...options,
  });
}
