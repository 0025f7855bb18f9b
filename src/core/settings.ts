import { type TSchema, Type } from "typebox";
import type { LimitsConfig } from "./limits.ts";

/**
 * The one schema of the settings, with their ranges: the configuration file (with the
 * environment over it) and the `createLonghaul` options are checked against these at start
 * (`checkSettings`), so a value out of range stops the start naming its key instead of
 * surfacing as a failure on some later request.
 */

/** A year, in seconds: the longest any wait, link, horizon or retention may be. */
export const YEAR_S = 31_536_000;
const DAY_S = 86_400;

/** A span in seconds: from `min` (above `min` when `above`) to `max`, whole seconds or not. */
export interface SecondsRange {
  min: number;
  max: number;
  whole: boolean;
  above?: boolean;
}

/**
 * The range of every setting in seconds, by its config key (for `retry_schedule_s`, of each
 * entry). The `createLonghaul` options in milliseconds that mirror one of them
 * (`pollAfterMs`, `defaultTimeoutMs`, `dedupeHorizonMs`) share its maximum and start at 1 ms,
 * since tests and embedders run short waits on a real clock.
 */
export const SECONDS_RANGES = {
  "tokens.ttl_s": { min: 60, max: YEAR_S, whole: true },
  "reconciler.poll_after_s": { min: 1, max: DAY_S, whole: true },
  "waits.default_timeout_s": { min: 1, max: YEAR_S, whole: true },
  "inbox.dedupe_horizon_s": { min: 3600, max: YEAR_S, whole: true },
  "outbound.timeout_s": { min: 0, above: true, max: 120, whole: false },
  "outbound.retry_schedule_s": { min: 0, max: 7 * DAY_S, whole: false },
  "limits.signal_retention_s": { min: 0, above: true, max: YEAR_S, whole: false },
  "limits.schema_timeout_s": { min: 0, above: true, max: 300, whole: false },
  "storage_urls.timeout_s": { min: 0, above: true, max: 3600, whole: false },
} as const satisfies Record<string, SecondsRange>;

/** Retries of an outbound webhook: the most entries `outbound.retry_schedule_s` may list. */
export const MAX_OUTBOUND_ATTEMPTS = 50;

/** The largest value of each count of `limits` (0 turns a rate off, or lifts a cap). */
export const LIMIT_MAX: Record<
  Exclude<keyof LimitsConfig, "signal_retention_s" | "schema_timeout_s">,
  number
> = {
  api_reads_per_min: 10_000_000,
  api_writes_per_min: 10_000_000,
  api_per_min: 10_000_000,
  unauthenticated_per_min: 10_000_000,
  hooks_per_min: 10_000_000,
  callbacks_per_min: 10_000_000,
  approvals_per_min: 10_000_000,
  sse_streams_per_tenant: 100_000,
  webhook_endpoints_per_tenant: 10_000,
  file_max_bytes: 2 ** 40,
  storage_quota_bytes: 2 ** 50,
  inline_max_bytes: 2 ** 31,
  inline_response_max_bytes: 2 ** 31,
  submit_max_bytes: 2 ** 31,
};

/** The shortest admin key: a guessable one would open every tenant. */
export const MIN_ADMIN_KEY_LENGTH = 32;

/** `host:port` of `metrics.listen`, an IPv6 host in brackets. */
export const LISTEN_PATTERN = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/;

// No user or password, query or fragment, blank or backslash: links are `<public_url>/<path>`.
const PUBLIC_URL_PATTERN = /^https?:\/\/[^\s/?#@\\]+(?:\/[^\s?#\\]*)?$/i;

/** Whether `text` is an absolute http or https URL. */
function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/** Whether `text` may be `public_url`: http(s), a host, an optional path, nothing else. */
export function isPublicUrl(text: string): boolean {
  if (!PUBLIC_URL_PATTERN.test(text)) return false;
  try {
    return new URL(text).hostname !== "";
  } catch {
    return false;
  }
}

const describeSeconds = (r: SecondsRange): string =>
  r.whole
    ? `a whole number of seconds from ${r.min} to ${r.max}`
    : r.above
      ? `a number of seconds above ${r.min} and at most ${r.max}`
      : `a number of seconds from ${r.min} to ${r.max}`;

const seconds = (key: keyof typeof SECONDS_RANGES): TSchema => {
  const r: SecondsRange = SECONDS_RANGES[key];
  const bounds = r.above ? { exclusiveMinimum: r.min } : { minimum: r.min };
  const options = { ...bounds, maximum: r.max, description: describeSeconds(r) };
  return r.whole ? Type.Integer(options) : Type.Number(options);
};

/** The milliseconds option that mirrors a key in seconds: the same maximum, from 1 ms. */
const millis = (key: keyof typeof SECONDS_RANGES): TSchema => {
  const max = SECONDS_RANGES[key].max * 1000;
  return Type.Number({ minimum: 1, maximum: max, description: `a number of milliseconds from 1 to ${max}` });
};

const bool = Type.Boolean({ description: "true or false" });

/** An object whose keys are all known: another one is refused, named. */
const block = (properties: Record<string, TSchema>) =>
  Type.Object(Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, Type.Optional(s)])), {
    additionalProperties: false,
    description: "an object",
  });

const PublicUrl = Type.Refine(
  Type.String({
    description:
      "an http or https URL with a host and no user, password, query or fragment, such as https://longhaul.example.com",
    // May carry credentials, which the message leaves out.
    redact: "url",
  }),
  isPublicUrl,
);

const RetrySchedule = Type.Refine(
  Type.Array(seconds("outbound.retry_schedule_s"), {
    minItems: 1,
    maxItems: MAX_OUTBOUND_ATTEMPTS,
    description: `a list of 1 to ${MAX_OUTBOUND_ATTEMPTS} delays in seconds, the first 0 (the first attempt is sent at once) and each from 0 to ${SECONDS_RANGES["outbound.retry_schedule_s"].max}, such as [0, 5, 300]`,
  }),
  (s: unknown[]) => s[0] === 0,
);

const Listen = Type.Refine(
  Type.String({ description: 'host:port, such as "127.0.0.1:9464" or "[::1]:9464"' }),
  (s: string) => {
    const m = LISTEN_PATTERN.exec(s);
    return m !== null && Number(m[3]) <= 65_535;
  },
);

/** The blocks the config file and the options share, snake_case in both. */
export const TokensSettings = block({ keys: Type.Unknown(), ttl_s: seconds("tokens.ttl_s") });
export const OutboundSettings = block({
  retry_schedule_s: RetrySchedule,
  allow_private_networks: bool,
  timeout_s: seconds("outbound.timeout_s"),
});
export const LimitsSettings = block({
  ...Object.fromEntries(
    Object.entries(LIMIT_MAX).map(([k, max]) => [
      k,
      Type.Integer({ minimum: 0, maximum: max, description: `a whole number from 0 (off) to ${max}` }),
    ]),
  ),
  signal_retention_s: seconds("limits.signal_retention_s"),
  schema_timeout_s: seconds("limits.schema_timeout_s"),
});
export const MetricsSettings = block({ listen: Listen, public: bool });

const text = (description: string, redact?: "length") =>
  Type.String({ minLength: 1, description, ...(redact ? { redact } : {}) });

/** Credentials of one bucket scheme: the key pair is required, the rest has defaults. */
const BucketCredentials = Type.Object(
  {
    endpoint: Type.Optional(
      Type.Refine(
        Type.String({ description: "an http or https URL, such as https://s3.example.com" }),
        isHttpUrl,
      ),
    ),
    region: Type.Optional(text("a region name, such as eu-west-1")),
    access_key_id: text("an access key id"),
    secret_access_key: text("a secret access key", "length"),
    force_path_style: Type.Optional(bool),
  },
  {
    additionalProperties: false,
    description: "an object with access_key_id and secret_access_key",
    // Holds a secret: a refusal of the whole object names its keys, not their values.
    redact: "keys",
  },
);

export const StorageUrlsSettings = block({
  timeout_s: seconds("storage_urls.timeout_s"),
  s3: BucketCredentials,
  gs: BucketCredentials,
});

const taskList = Type.Array(Type.Unknown(), { description: "a list of task types" });

/** The configuration file, the environment's values over it (LonghaulConfig in src/cli/config.ts). */
export const ConfigSettings = block({
  // Checked entry by entry where they are built (src/ingress/sources.ts, src/providers/from-config.ts).
  sources: Type.Unknown(),
  providers: Type.Unknown(),
  tokens: TokensSettings,
  public_url: PublicUrl,
  reconciler: block({ poll_after_s: seconds("reconciler.poll_after_s") }),
  waits: block({ default_timeout_s: seconds("waits.default_timeout_s") }),
  inbox: block({ dedupe_horizon_s: seconds("inbox.dedupe_horizon_s") }),
  outbound: OutboundSettings,
  // Checked where they are built (src/notify/settings.ts), naming the key.
  notify: Type.Unknown(),
  notifiers: Type.Unknown(),
  limits: LimitsSettings,
  metrics: MetricsSettings,
  storage_urls: StorageUrlsSettings,
  taskTypes: taskList,
  tasks: taskList,
});

/**
 * The `createLonghaul` options that carry a setting. The others (a store, a clock, a logger,
 * task types…) are objects of the caller's, used as they are.
 */
export const OptionSettings = Type.Object(
  {
    publicUrl: Type.Optional(PublicUrl),
    pollAfterMs: Type.Optional(millis("reconciler.poll_after_s")),
    defaultTimeoutMs: Type.Optional(millis("waits.default_timeout_s")),
    dedupeHorizonMs: Type.Optional(millis("inbox.dedupe_horizon_s")),
    httpTimeouts: Type.Optional(
      block({
        headersMs: Type.Number({
          minimum: 1,
          maximum: 600_000,
          description: "a number of milliseconds from 1 to 600000",
        }),
        requestMs: Type.Number({
          minimum: 1,
          maximum: 3_600_000,
          description: "a number of milliseconds from 1 to 3600000",
        }),
      }),
    ),
    adminKey: Type.Optional(
      Type.String({
        minLength: MIN_ADMIN_KEY_LENGTH,
        description: `a string of at least ${MIN_ADMIN_KEY_LENGTH} characters, such as \`openssl rand -base64 32\` prints`,
        redact: "length",
      }),
    ),
    tokens: Type.Optional(TokensSettings),
    outbound: Type.Optional(OutboundSettings),
    limits: Type.Optional(LimitsSettings),
    metrics: Type.Optional(MetricsSettings),
    storageUrls: Type.Optional(StorageUrlsSettings),
  },
  { additionalProperties: true },
);
