import { LonghaulError } from "../core/errors.ts";
import { defaultPorts, type SinkKind, sinkSchemes } from "../core/sink-kind.ts";

/**
 * Parses a sink's broker URL: absolute, a scheme its kind accepts, a host. Credentials may be in
 * it (that is why it is stored sealed). VALIDATION_FAILED quotes the scheme or the kind, never
 * the URL, which may carry a password.
 */
export function parseSinkUrl(kind: SinkKind, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new LonghaulError("VALIDATION_FAILED", `"url" is not an absolute URL for a ${kind} sink.`);
  }
  const schemes = sinkSchemes[kind];
  if (!schemes.includes(url.protocol)) {
    throw new LonghaulError(
      "VALIDATION_FAILED",
      `"url" of a ${kind} sink must start with ${schemes.map((s) => `${s}//`).join(" or ")}.`,
    );
  }
  if (!url.hostname) throw new LonghaulError("VALIDATION_FAILED", `"url" of a ${kind} sink names no host.`);
  return url;
}

/** What answers show of a broker URL: scheme, host, port and path, without credentials or query. */
export function displaySinkUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname === "/" ? "" : url.pathname}`;
}

/** The port to connect to: the URL's, else the scheme's default. */
export const sinkPort = (url: URL): number =>
  url.port ? Number(url.port) : (defaultPorts[url.protocol] ?? 0);

/** True for the TLS schemes. */
export const sinkTls = (url: URL): boolean => ["amqps:", "rediss:"].includes(url.protocol);

/**
 * A broker's error message with the URL's credentials taken out: client libraries may quote
 * the URL they were given, and the delivery log is the tenant's to read.
 */
export function scrubCredentials(message: string, url: URL): string {
  let out = message;
  for (const part of [
    url.password,
    url.username,
    decodeURIComponent(url.password),
    decodeURIComponent(url.username),
  ]) {
    if (part.length >= 3) out = out.split(part).join("***");
  }
  return out.slice(0, 500);
}
