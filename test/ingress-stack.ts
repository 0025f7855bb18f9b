import { createHash } from "node:crypto";
import { connect } from "node:net";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { Logger } from "pino";
import { createLonghaul, type Longhaul } from "../src/app.ts";
import { signGithub } from "../src/ingress/github.ts";
import { signGoogHmac } from "../src/ingress/goog-hmac.ts";
import { signSlack } from "../src/ingress/slack.ts";
import type { SourceConfig } from "../src/ingress/sources.ts";
import { signStripe } from "../src/ingress/stripe.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { signStandardWebhook } from "../src/webhooks/standard-webhooks.ts";
import { quietLog, tempDir } from "./helpers.ts";

/** Signs `body` as the sender of one source would, at `nowS`. */
export type Sign = (body: Buffer, nowS: number) => Promise<Record<string, string>>;

export interface IngressStack {
  url: string;
  store: SqliteStore;
  /** One source per scheme, named after it, each with a signer. */
  senders: Record<string, Sign>;
  /** Rows in the inbox, of one source or of all. */
  inboxCount(source?: string): number;
  close(): Promise<void>;
}

export const HMAC_SECRET = "a shared secret for the ingress tests";
const WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
export const JWT_ISSUER = "https://sender.example";
export const JWT_AUDIENCE = "https://hooks.example/hooks/jwt";

/**
 * The API alone (no worker, so inbox rows stay as recorded) on a SQLite file, with a source
 * for every scheme, a `tiny` one whose body limit is `tinyLimit` bytes, and any `extra`.
 */
export async function startIngressStack(
  opts: { tinyLimit?: number; extra?: Record<string, SourceConfig>; logger?: Logger } = {},
): Promise<IngressStack> {
  const tmp = tempDir("longhaul-ingress-");
  const store = new SqliteStore({ path: join(tmp.dir, "longhaul.db") });
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const hmac = (scheme: string): SourceConfig => ({ provider: "sim", scheme, secrets: [HMAC_SECRET] });
  const sources: Record<string, SourceConfig> = {
    "standard-webhooks": { provider: "sim", secrets: [WHSEC] },
    stripe: hmac("stripe"),
    github: hmac("github"),
    "goog-hmac": hmac("goog-hmac"),
    slack: hmac("slack"),
    jwt: {
      provider: "sim",
      scheme: "jwt",
      jwks: { keys: [jwk] },
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
    },
    tiny: { provider: "sim", secrets: [WHSEC], body_limit: opts.tinyLimit ?? 1024 },
    ...opts.extra,
  };
  const standard: Sign = async (body, nowS) => {
    const id = `msg_${createHash("sha256").update(body).digest("hex").slice(0, 16)}`;
    const signature = signStandardWebhook({ id, timestampS: nowS, body, secret: WHSEC });
    return { "webhook-id": id, "webhook-timestamp": String(nowS), "webhook-signature": signature };
  };
  const senders: Record<string, Sign> = {
    "standard-webhooks": standard,
    tiny: standard,
    stripe: async (body, nowS) => ({
      "stripe-signature": signStripe({ timestampS: nowS, body, secret: HMAC_SECRET }),
    }),
    github: async (body) => ({
      "x-hub-signature-256": signGithub({ body, secret: HMAC_SECRET }),
      "x-github-delivery": createHash("sha1").update(body).digest("hex"),
    }),
    "goog-hmac": async (body, nowS) => ({
      "x-goog-signature": signGoogHmac({ timestampS: nowS, body, secret: HMAC_SECRET }),
      "x-goog-timestamp": String(nowS),
    }),
    slack: async (body, nowS) => ({
      "x-slack-signature": signSlack({ timestampS: nowS, body, secret: HMAC_SECRET }),
      "x-slack-request-timestamp": String(nowS),
    }),
    jwt: async (body, nowS) => {
      const token = await new SignJWT({ body_sha256: createHash("sha256").update(body).digest("hex") })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuer(JWT_ISSUER)
        .setAudience(JWT_AUDIENCE)
        .setIssuedAt(nowS)
        .setExpirationTime(nowS + 300)
        .sign(privateKey);
      return { authorization: `Bearer ${token}` };
    },
  };
  let app: Longhaul | null = null;
  try {
    app = await createLonghaul({ store, logger: opts.logger ?? quietLog(), role: "api", sources });
    const url = await app.listen({ port: 0 });
    const running = app;
    return {
      url,
      store,
      senders,
      inboxCount(source) {
        const row = (
          source === undefined
            ? store.db.prepare("SELECT count(*) AS n FROM inbox_events").get()
            : store.db.prepare("SELECT count(*) AS n FROM inbox_events WHERE source = ?").get(source)
        ) as { n: number };
        return row.n;
      },
      async close() {
        await running.close();
        tmp.cleanup();
      },
    };
  } catch (err) {
    await (app ? app.close() : store.close());
    tmp.cleanup();
    throw err;
  }
}

/**
 * Sends `head` (request line and headers, CRLF-separated, without the blank line) and then
 * each of `chunks`, over a bare socket, and resolves with the status line's code. The body
 * never has to be complete: this is how a refusal before the body is read is observed.
 */
export function rawRequest(url: string, head: string, chunks: (string | Buffer)[] = []): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    socket.setTimeout(5000, () => socket.destroy(new Error("no answer within 5 s")));
    socket.on("data", (d) => {
      answer += d.toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (status) {
        resolve(Number(status[1]));
        socket.destroy();
      }
    });
    socket.on("error", (err) => (answer ? undefined : reject(err)));
    socket.on("connect", () => {
      socket.write(Buffer.from(`${head}\r\n\r\n`, "latin1"));
      for (const chunk of chunks) if (!socket.destroyed) socket.write(chunk);
    });
  });
}
