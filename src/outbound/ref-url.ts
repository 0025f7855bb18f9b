import { isIP } from "node:net";
import { LonghaulError } from "../core/errors.ts";
import type { UrlPolicy } from "../core/file-refs.ts";
import { classifyAddress } from "./ssrf.ts";

const notAllowed = (message: string, param: string) =>
  new LonghaulError("URL_NOT_ALLOWED", message, { param });

/**
 * Checks a referenced URL by its text alone (no DNS: the read re-checks resolved addresses):
 * `https://`, `s3://bucket/key`, `gs://bucket/object`; `http://` only under the policy's
 * allowance; never a `localhost` host or a literal address outside the public internet
 * (private and loopback ones under the allowance). Throws URL_NOT_ALLOWED naming `param`.
 */
export function checkRefUrl(text: string, policy: UrlPolicy, param = "url"): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw notAllowed(`"${text.slice(0, 200)}" is not an absolute URL.`, param);
  }
  if (url.protocol === "s3:" || url.protocol === "gs:") {
    if (!url.hostname || url.pathname.length <= 1) {
      throw notAllowed(
        `A ${url.protocol}// URL names a bucket and a key: ${url.protocol}//bucket/key.`,
        param,
      );
    }
    return url;
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowPrivateNetworks)) {
    throw notAllowed(
      `${url.protocol.replace(/:$/, "")}: URLs are not read; use https://, s3://bucket/key or gs://bucket/object.`,
      param,
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const local = host === "localhost" || host.endsWith(".localhost");
  const cls = isIP(host) ? classifyAddress(host) : local ? "private" : "public";
  if (cls === "public" || (cls === "private" && policy.allowPrivateNetworks)) return url;
  throw notAllowed(
    `${host} is a ${cls === "private" ? "private or loopback" : cls} address; files are read from public addresses only.`,
    param,
  );
}
