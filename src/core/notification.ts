/**
 * Where an approval reaches people (ARCHITECTURE §4.4, "Notify, then wait"): the channels of
 * its `notify` option, checked before anything is stored, and the messages it owes, one per
 * channel and approver. Pure: the senders are in src/notify.
 */

export const notifyChannels = ["email", "slack", "wecom", "webhook"] as const;
export type NotifyChannel = (typeof notifyChannels)[number];

/**
 * An email channel. Without `to`, each named approver's message goes to the approver's own
 * name, which must then be an address; `to` as an object maps approvers to addresses; a
 * string or list receives the step's own links on an approval without named approvers.
 */
export interface EmailTarget {
  channel: "email";
  to?: string | string[] | Record<string, string>;
}

/** Slack: an incoming webhook's URL, or a channel id posted to with the configured bot token. */
export interface SlackTarget {
  channel: "slack";
  webhook_url?: string;
  channel_id?: string;
}

/** A WeCom (企业微信) group robot: its webhook URL, and the message type. */
export interface WecomTarget {
  channel: "wecom";
  webhook_url: string;
  /** Default `markdown`. */
  msgtype?: "markdown" | "template_card";
}

/** A generic webhook, signed with Standard Webhooks (the notifier's `secret`, else the deployment's). */
export interface WebhookTarget {
  channel: "webhook";
  url: string;
  /** Only in a configured notifier: a secret never travels in task input. */
  secret?: string;
}

export type NotifyTarget = EmailTarget | SlackTarget | WecomTarget | WebhookTarget;

/**
 * An entry of `notify`: a channel, or the name of one configured under `notifiers` (stored as
 * `{notifier, channel}`, the channel it had when the step was stored, for the view).
 */
export type NotifyEntry = NotifyTarget | string | { notifier: string; channel?: NotifyChannel };

/** Why a message is owed. */
export type NotifyReason = "request" | "reminder" | "escalation";

/** What a channel check knows of the deployment: its notifiers, and whether webhooks can be signed. */
export interface NotifyContext {
  notifiers: Readonly<Record<string, NotifyTarget>>;
  /** A deployment-wide signing secret for webhook channels without one of their own. */
  webhookSecret: boolean;
}

// An address as a mail transfer agent takes it: one @, no spaces or angle brackets, a dotted domain.
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

export const isEmailAddress = (s: unknown): s is string =>
  typeof s === "string" && s.length <= 254 && EMAIL.test(s);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const httpUrl = (v: unknown): boolean => {
  if (typeof v !== "string") return false;
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
};

const TARGET_FIELDS: Record<NotifyChannel, readonly string[]> = {
  email: ["channel", "to"],
  slack: ["channel", "webhook_url", "channel_id"],
  wecom: ["channel", "webhook_url", "msgtype"],
  webhook: ["channel", "url", "secret"],
};

/**
 * What is wrong with one channel, in words after its option path (`notify[0]`), or null.
 * `configured` is true for a notifier of the config, the only place a webhook's `secret` may be.
 */
export function targetProblem(t: unknown, configured: boolean, ctx: NotifyContext | null): string | null {
  if (!isObject(t)) return "must be an object with a channel, or the name of a configured notifier";
  const channel = t.channel;
  if (typeof channel !== "string" || !(notifyChannels as readonly string[]).includes(channel)) {
    return `.channel is ${JSON.stringify(channel) ?? "missing"}; the channels are ${notifyChannels.join(", ")}`;
  }
  if (Object.hasOwn(t, "secret") && !configured) {
    return ".secret may only be set in a configured notifier (config `notifiers`), never in task input";
  }
  const fields = TARGET_FIELDS[channel as NotifyChannel];
  const extra = Object.keys(t).find((k) => !fields.includes(k));
  if (extra !== undefined) {
    return `.${extra} is not a field of a ${channel} channel; its fields are ${fields.join(", ")}`;
  }
  switch (channel as NotifyChannel) {
    case "email": {
      const to = t.to;
      if (to === undefined) return null;
      const list =
        typeof to === "string" ? [to] : Array.isArray(to) ? to : isObject(to) ? Object.values(to) : null;
      if (list === null || list.length === 0)
        return ".to must be an address, a list of them, or {approver: address}";
      const bad = list.find((a) => !isEmailAddress(a));
      return bad === undefined ? null : `.to holds ${JSON.stringify(bad)}, which is not an email address`;
    }
    case "slack":
      if ((t.webhook_url === undefined) === (t.channel_id === undefined)) {
        return " needs exactly one of webhook_url and channel_id";
      }
      if (t.webhook_url !== undefined && !httpUrl(t.webhook_url))
        return ".webhook_url must be an http(s) URL";
      if (t.channel_id !== undefined && (typeof t.channel_id !== "string" || t.channel_id === "")) {
        return ".channel_id must be a non-empty string";
      }
      return null;
    case "wecom":
      if (!httpUrl(t.webhook_url)) return ".webhook_url must be the robot's http(s) webhook URL";
      if (t.msgtype !== undefined && t.msgtype !== "markdown" && t.msgtype !== "template_card") {
        return '.msgtype must be "markdown" or "template_card"';
      }
      return null;
    case "webhook":
      if (!httpUrl(t.url)) return ".url must be an http(s) URL";
      if (t.secret !== undefined && (typeof t.secret !== "string" || t.secret === "")) {
        return ".secret must be a non-empty string";
      }
      if (t.secret === undefined && ctx !== null && !ctx.webhookSecret) {
        return " has no signing secret: set notify.webhook_secret in the config, or name a configured notifier with a secret";
      }
      return null;
  }
}

/** The name an entry refers to, or null for a channel given inline. */
export function notifierName(e: unknown): string | null {
  if (typeof e === "string") return e;
  if (isObject(e) && typeof e.notifier === "string") {
    const keys = Object.keys(e);
    if (keys.every((k) => k === "notifier" || k === "channel")) return e.notifier;
  }
  return null;
}

/**
 * What is wrong with a `notify` list, as `<path> <problem>`, or null. With `ctx` null (a graph
 * checked without the deployment) names are not looked up.
 */
export function notifyProblem(notify: unknown, path: string, ctx: NotifyContext | null): string | null {
  if (notify === undefined) return null;
  if (!Array.isArray(notify)) return `${path} must be a list of channels`;
  for (const [i, e] of notify.entries()) {
    const at = `${path}[${i}]`;
    const name = notifierName(e);
    if (name !== null) {
      if (ctx !== null && !Object.hasOwn(ctx.notifiers, name)) {
        const known = Object.keys(ctx.notifiers);
        return `${at} names the notifier ${JSON.stringify(name)}, which the config does not define${known.length ? ` (it defines ${known.join(", ")})` : " (it defines none)"}`;
      }
      continue;
    }
    const problem = targetProblem(e, false, ctx);
    if (problem !== null)
      return `${at}${problem.startsWith(".") || problem.startsWith(" ") ? "" : " "}${problem}`;
  }
  return null;
}

/**
 * An inline email channel whose `to` lists addresses on an approval with named approvers:
 * another address than an approver's own would receive that approver's links.
 */
export function emailToProblem(notify: unknown, path: string, approvers: readonly string[]): string | null {
  if (!Array.isArray(notify) || approvers.length === 0) return null;
  for (const [i, e] of notify.entries()) {
    if (!isObject(e) || e.channel !== "email" || e.to === undefined || isObject(e.to)) continue;
    return `${path}[${i}].to lists addresses, but the approval names its approvers; map each approver to an address ({"approver": "address"}) or leave to out`;
  }
  return null;
}

/** The channel an entry stands for, given the config's notifiers (null for an unknown name). */
export function resolveEntry(
  e: NotifyEntry,
  notifiers: Readonly<Record<string, NotifyTarget>>,
): NotifyTarget | null {
  const name = notifierName(e);
  if (name === null) return e as NotifyTarget;
  return Object.hasOwn(notifiers, name) ? notifiers[name]! : null;
}

/** The channel name of an entry as stored, for the view (a named one's channel is read at send time). */
export function entryChannel(e: NotifyEntry): string {
  if (typeof e === "string") return "notifier";
  return e.channel ?? "notifier";
}

/**
 * An entry as the step stores it: a configured notifier's name with the channel it stands
 * for (read again from the config when sending), an inline channel as given.
 */
export function storedEntry(e: NotifyEntry, notifiers: Readonly<Record<string, NotifyTarget>>): NotifyEntry {
  const name = notifierName(e);
  if (name === null) return e;
  const t = Object.hasOwn(notifiers, name) ? notifiers[name] : undefined;
  return t ? { notifier: name, channel: t.channel } : { notifier: name };
}

/**
 * Where a message goes, as the task view shows it: an address, a Slack channel id, a
 * notifier's name, or the host of a URL (a webhook URL's path is often its secret).
 */
export function shownRecipient(e: NotifyEntry, approver: string | null): string | null {
  const name = notifierName(e);
  if (name !== null) return name;
  const t = e as NotifyTarget;
  const host = (u: string) => {
    try {
      return new URL(u).host;
    } catch {
      return null;
    }
  };
  switch (t.channel) {
    case "email": {
      const to = emailRecipients(t, approver);
      return typeof to === "string" ? null : to.join(", ");
    }
    case "slack":
      return t.channel_id ?? (t.webhook_url ? host(t.webhook_url) : null);
    case "wecom":
      return host(t.webhook_url);
    case "webhook":
      return host(t.url);
  }
}

/** One message owed: an entry of `notify` (by index) for one approver, or the step's links (null). */
export interface OwedMessage {
  entry: number;
  approver: string | null;
  reason: NotifyReason;
}

/**
 * The messages an approval owes: one per entry and named approver, each with that approver's
 * links; on an approval without named approvers one per entry with the step's links.
 */
export function owedMessages(
  entries: readonly NotifyEntry[],
  approvers: readonly string[],
  reason: NotifyReason,
): OwedMessage[] {
  const people: (string | null)[] = approvers.length > 0 ? [...approvers] : [null];
  return entries.flatMap((_, entry) => people.map((approver) => ({ entry, approver, reason })));
}

/** Where an email for `approver` goes, or why it cannot go. */
export function emailRecipients(t: EmailTarget, approver: string | null): string[] | string {
  const to = t.to;
  if (approver !== null) {
    if (isObject(to)) {
      const a = to[approver];
      return a === undefined
        ? `notify.to names no address for the approver ${JSON.stringify(approver)}`
        : [a];
    }
    if (to === undefined) {
      return isEmailAddress(approver)
        ? [approver]
        : `the approver ${JSON.stringify(approver)} is not an email address; map approvers to addresses in notify.to`;
    }
    // Another address than the approver's own would receive that approver's links.
    return "notify.to lists addresses, but the approval names its approvers: map each approver to an address ({approver: address})";
  }
  if (to === undefined || isObject(to))
    return "notify.to must name an address for an approval without named approvers";
  return typeof to === "string" ? [to] : to;
}

/** The states of a notification: forward only (ARCHITECTURE §3.3), `sent`, `failed` and `skipped` final. */
export const notificationStates = ["pending", "sent", "failed", "dead", "skipped"] as const;
export type NotificationState = (typeof notificationStates)[number];

/** `dead` moves back to `pending` only by a replay; `failed` (a message no retry can help) stays. */
export const notificationMoves: Readonly<Record<NotificationState, readonly NotificationState[]>> = {
  pending: ["sent", "failed", "dead", "skipped"],
  dead: ["pending"],
  sent: [],
  failed: [],
  skipped: [],
};

export function canMoveNotification(from: NotificationState, to: NotificationState): boolean {
  return notificationMoves[from].includes(to);
}
