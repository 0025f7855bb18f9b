import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; // Crockford base32

/** Produces ids; tests inject a deterministic one. */
export interface IdGenerator {
  /** A sortable, unique id with the given prefix, e.g. `t_01J…`. */
  next(prefix: string): string;
}

/**
 * ULIDs, monotonic within a millisecond (the random part is incremented), so ids of one
 * process sort by creation order, which the task list's cursor relies on.
 */
export function ulidGenerator(
  clock: Clock = systemClock,
  random: (n: number) => Uint8Array = randomBytes,
): IdGenerator {
  let lastTime = -1;
  let lastRandom: number[] = [];
  return {
    next(prefix: string): string {
      const t = clock.now();
      if (t === lastTime) {
        increment(lastRandom);
      } else {
        lastTime = t;
        lastRandom = Array.from(random(16), (b) => b & 31);
      }
      let time = "";
      let v = t;
      for (let i = 0; i < 10; i++) {
        time = ALPHABET[v % 32] + time;
        v = Math.floor(v / 32);
      }
      return `${prefix}_${time}${lastRandom.map((d) => ALPHABET[d]).join("")}`;
    },
  };
}

function increment(digits: number[]): void {
  for (let i = digits.length - 1; i >= 0; i--) {
    const d = digits[i]!;
    if (d < 31) {
      digits[i] = d + 1;
      return;
    }
    digits[i] = 0;
  }
}

function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}
