/** An HTTP error in the API's shape `{"error": {"code", "message"}}`, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** Bearer key; omitted for capability URLs. */
  key?: string | null | undefined;
  signal?: AbortSignal;
}

/** JSON over fetch, same origin. Throws ApiError with the server's code and message. */
export async function request<T>(path: string, o: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, {
      method: o.method ?? (o.body === undefined ? "GET" : "POST"),
      headers,
      body: o.body === undefined ? null : JSON.stringify(o.body),
      cache: "no-store",
      ...(o.signal ? { signal: o.signal } : {}),
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "NETWORK", "The server cannot be reached; check that it is running.");
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(
      res.status,
      e?.code ?? `HTTP_${res.status}`,
      e?.message ?? `${res.status} ${res.statusText}`,
    );
  }
  return body as T;
}

export const isAbort = (err: unknown) => (err as Error | null)?.name === "AbortError";

/** A query string from the set fields only. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
