/**
 * Where a sealed secret is kept, as `table:id:column`. A sealed value carries its place as
 * AES-GCM associated data (src/secrets/), so a copy moved to another row or column does not
 * open there: a value that reaches the wrong endpoint would sign its deliveries with another
 * tenant's secret.
 */
export const sealedAt = (table: string, id: string, column: string) => `${table}:${id}:${column}`;

/**
 * An endpoint's signing secrets. The secrets a rotation moves to `previous_secrets` keep this
 * place: they were sealed for the row's `secret` column and move within the row unopened.
 */
export const endpointSecretAt = (endpointId: string) => sealedAt("webhook_endpoints", endpointId, "secret");

/** A value of the `meta` table (generated token keys, what `longhaul dev` keeps). */
export const metaValueAt = (key: string) => sealedAt("meta", key, "value");
