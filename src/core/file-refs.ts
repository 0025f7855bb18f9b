/**
 * A reference to bytes in a task's input: one of the tenant's files (`{"file_id": "file_…"}`)
 * or a URL (`{"url": "https://…" | "s3://bucket/key" | "gs://bucket/object"}`). A reference is
 * an object with that one key and a string value; anything else is plain data.
 */
export type FileRef = { file_id: string } | { url: string };

/** A reference found in an input, with the JSON path it was found at (`input.docs[0]`). */
export type FoundRef = { path: string } & ({ kind: "file"; fileId: string } | { kind: "url"; url: string });

/** Whether plain `http://` and private or loopback hosts are allowed (`outbound.allow_private_networks`: development and tests). */
export interface UrlPolicy {
  allowPrivateNetworks: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The value as a file reference, or null when it is not one. */
export function asFileRef(v: unknown): FileRef | null {
  if (!isObject(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1) return null;
  if (keys[0] === "file_id" && typeof v.file_id === "string") return { file_id: v.file_id };
  if (keys[0] === "url" && typeof v.url === "string") return { url: v.url };
  return null;
}

/** Every file reference in an input, depth first, each with its path under `root`. */
export function findFileRefs(input: unknown, root = "input"): FoundRef[] {
  const out: FoundRef[] = [];
  const walk = (v: unknown, path: string, depth: number): void => {
    if (depth > 64) return;
    const ref = asFileRef(v);
    if (ref) {
      out.push(
        "file_id" in ref ? { path, kind: "file", fileId: ref.file_id } : { path, kind: "url", url: ref.url },
      );
      return;
    }
    if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) walk(x, `${path}[${i}]`, depth + 1);
    } else if (isObject(v)) for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`, depth + 1);
  };
  walk(input, root, 0);
  return out;
}

/** A referenced file opened for reading: its bytes as a stream, and what is known about them. */
export interface OpenedFile {
  stream: AsyncIterable<Uint8Array>;
  size?: number;
  contentType?: string;
  sha256?: string;
}

/** `ctx.files` of a task function: opens the file references of its input, scoped by its tenant. */
export interface TaskFiles {
  /**
   * Streams the file a reference names: FILE_NOT_FOUND when the tenant has no such file; for a
   * URL, URL_NOT_ALLOWED, FILE_TOO_LARGE, URL_READ_FAILED or URL_READS_NOT_CONFIGURED.
   */
  open(ref: FileRef): Promise<OpenedFile>;
}
