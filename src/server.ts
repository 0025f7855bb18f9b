// `import { createLonghaul, PostgresStore } from "longhaul/server"`: what a deployment assembles
// (ARCHITECTURE §5): the engine with its HTTP API, and the stores.
export { createLonghaul, createLonghaul as longhaul, type Longhaul, type LonghaulOptions } from "./app.ts";
export {
  type BlobInfo,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  FsBlobStore,
  type FsBlobStoreOptions,
  openS3BlobStore,
  type S3BlobStoreOptions,
} from "./blobs/index.ts";
export type { IdGenerator } from "./core/ids.ts";
export { errorStatus, httpStatusOf } from "./http/error-status.ts";
export {
  type ClientAddress,
  type FetchHandler,
  type FetchHandlerOptions,
  type FetchOptions,
  fetchHandler,
} from "./http/fetch.ts";
export {
  type ApiGatewayV2Event,
  type ApiGatewayV2Result,
  type LambdaOptions,
  toLambdaHandler,
} from "./http/lambda.ts";
export { openStore } from "./store/open-store.ts";
export { PostgresStore, type PostgresStoreOptions } from "./store/postgres/postgres-store.ts";
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite/sqlite-store.ts";
export type { Store } from "./store/store.ts";
