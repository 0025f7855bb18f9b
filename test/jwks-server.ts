import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair } from "jose";

/**
 * A signing key and a JWKS server on loopback that publishes its public half under `kid`, as
 * Google publishes its certs: what the jwt scheme's tests sign and verify with.
 */
export async function startJwksServer(
  path: string,
  kid = "google-1",
): Promise<{ privateKey: CryptoKey; jwksUrl: string; close: () => Promise<void> }> {
  const keys = await generateKeyPair("RS256", { extractable: true });
  const jwks = { keys: [{ ...(await exportJWK(keys.publicKey)), kid, alg: "RS256", use: "sig" }] };
  const server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks)),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    privateKey: keys.privateKey,
    jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
