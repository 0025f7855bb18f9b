import { LonghaulError } from "../core/errors.ts";
import { type NotifyContext, type NotifyTarget, targetProblem } from "../core/notification.ts";

/** The `notify` block of the configuration: how messages leave (ARCHITECTURE §4.7). */
export interface NotifyConfig {
  /** The mail server email channels send through (nodemailer's SMTP transport). */
  smtp?: {
    host: string;
    port?: number;
    /** TLS from the first byte (port 465); otherwise STARTTLS when the server offers it. */
    secure?: boolean;
    user?: string;
    pass?: string;
    /** The sender, e.g. `"Approvals <approvals@example.com>"`. */
    from: string;
  };
  slack?: {
    /** `xoxb-…`: posts to a `channel_id` with `chat.postMessage`. */
    bot_token?: string;
    /** The app's signing secrets (several during a rotation): they verify button clicks. */
    signing_secrets?: string[];
    /** Slack user id (`U…`) or the email of a Slack user's profile → the approver it decides as. */
    users?: Record<string, string>;
    /** Where Slack's Web API answers. Default `https://slack.com/api`. */
    api_url?: string;
  };
  /** The Standard Webhooks secret (`whsec_…`) that signs webhook channels without one of their own. */
  webhook_secret?: string;
}

/** The notify settings as the engine and the API use them. */
export interface NotifySettings {
  smtp: NotifyConfig["smtp"] | null;
  slack: {
    botToken: string | null;
    signingSecrets: string[];
    users: Readonly<Record<string, string>>;
    apiUrl: string;
  };
  webhookSecret: string | null;
  /** Channels by name (`notifiers` in the config), referred to from `notify` by name. */
  notifiers: Readonly<Record<string, NotifyTarget>>;
}

const invalid = (key: string, problem: string) =>
  new LonghaulError("CONFIG_INVALID", `The configuration's ${key} ${problem}.`);

/** A key the block does not take stops the start, named, rather than being ignored (a typo). */
function unknownKey(block: object, at: string, keys: readonly string[]): void {
  if (typeof block !== "object" || block === null || Array.isArray(block))
    throw invalid(at, "must be an object");
  const extra = Object.keys(block).find((k) => !keys.includes(k));
  if (extra !== undefined)
    throw invalid(`${at}.${extra}`, `is not a key of ${at}; its keys are ${keys.join(", ")}`);
}

/**
 * The `notify` and `notifiers` configuration, checked: a notifier that names an unknown
 * channel or a malformed address stops the start, naming its key, rather than failing a step
 * days later.
 */
export function notifySettings(
  config: NotifyConfig = {},
  notifiers: Record<string, unknown> = {},
): NotifySettings {
  if (typeof notifiers !== "object" || notifiers === null || Array.isArray(notifiers)) {
    throw invalid("notifiers", "must be an object of channels by name");
  }
  unknownKey(config, "notify", ["smtp", "slack", "webhook_secret"]);
  if (config.smtp !== undefined)
    unknownKey(config.smtp, "notify.smtp", ["host", "port", "secure", "user", "pass", "from"]);
  if (config.slack !== undefined) {
    unknownKey(config.slack, "notify.slack", ["bot_token", "signing_secrets", "users", "api_url"]);
  }
  const webhookSecret = config.webhook_secret ?? null;
  if (webhookSecret !== null && !/^wh(sec|sk)_[A-Za-z0-9+/=]+$/.test(webhookSecret)) {
    throw invalid(
      "notify.webhook_secret",
      'must be a Standard Webhooks secret: "whsec_" (or an ed25519 "whsk_" key) and base64',
    );
  }
  if (
    config.smtp !== undefined &&
    (typeof config.smtp.host !== "string" || typeof config.smtp.from !== "string")
  ) {
    throw invalid("notify.smtp", "needs host and from");
  }
  const ctx: NotifyContext = { notifiers: {}, webhookSecret: webhookSecret !== null };
  for (const [name, t] of Object.entries(notifiers)) {
    const problem = targetProblem(t, true, ctx);
    if (problem !== null)
      throw invalid(
        `notifiers.${name}`,
        problem.replace(/^[ .]/, (c) => (c === "." ? "." : "")),
      );
  }
  return {
    smtp: config.smtp ?? null,
    slack: {
      botToken: config.slack?.bot_token ?? null,
      signingSecrets: config.slack?.signing_secrets ?? [],
      users: config.slack?.users ?? {},
      apiUrl: (config.slack?.api_url ?? "https://slack.com/api").replace(/\/$/, ""),
    },
    webhookSecret,
    notifiers: notifiers as Record<string, NotifyTarget>,
  };
}

/** What checking an approval's `notify` needs of the settings. */
export const notifyContext = (s: NotifySettings): NotifyContext => ({
  notifiers: s.notifiers,
  webhookSecret: s.webhookSecret !== null,
});
