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
  /** The time part of the ids of `lastTime`, and their random part (16 base-32 digits). */
  let time = "";
  const lastRandom: number[] = new Array(16).fill(0);
  return {
    next(prefix: string): string {
      const t = clock.now();
      if (t === lastTime) {
        increment(lastRandom);
      } else {
        lastTime = t;
        const bytes = random(16);
        for (let i = 0; i < 16; i++) lastRandom[i] = bytes[i]! & 31;
        time = "";
        let v = t;
        for (let i = 0; i < 10; i++) {
          time = ALPHABET[v % 32] + time;
          v = Math.floor(v / 32);
        }
      }
      let rand = "";
      for (let i = 0; i < 16; i++) rand += ALPHABET[lastRandom[i]!];
      return `${prefix}_${time}${rand}`;
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

/** Random bytes drawn from a pool refilled 4 KiB at a time: one CSPRNG call per 256 ids. */
const pool = new Uint8Array(4096);
let used = pool.length;
function randomBytes(n: number): Uint8Array {
  if (used + n > pool.length) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  used += n;
  return pool.subarray(used - n, used);
}
