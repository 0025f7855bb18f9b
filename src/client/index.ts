// `import { LonghaulClient } from "longhaul/client"`: the typed HTTP client, with no dependencies
// and nothing from the server, so it runs wherever fetch does.
export {
  LonghaulClient,
  LonghaulClientError,
  type LonghaulClientOptions,
  type SubmitInput,
  type SubscribeOptions,
} from "./longhaul-client.ts";
export { type SseMessage, SseParser } from "./sse-parser.ts";
export type * from "./types.ts";
