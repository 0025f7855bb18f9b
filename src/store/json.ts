/** How both stores keep JSON values: as text, with `undefined` stored as `null`. */
export const json = (v: unknown): string => JSON.stringify(v ?? null);

/** The value of a JSON text column; SQL NULL reads as `null`. */
export const parseJson = <T = unknown>(s: string | null | undefined): T =>
  (s == null ? null : JSON.parse(s)) as T;
