import { NonRetriableError } from "../core/errors.ts";
import { asFileRef, type FileRef, type TaskFiles } from "../core/file-refs.ts";
import { defineTask } from "../core/task-type.ts";

/** One of the tenant's files or a URL: `{"file_id": "file_…"}` or `{"url": "https://…"}`. */
export type DemoFileInput = FileRef;

export interface DemoFileOutput {
  /** The artifact's name: download it at `GET /v1/tasks/:id/artifacts/copy`. */
  artifact: string;
  size: number;
  /** SHA-256 of the stored copy, hex: compare it with the file's. */
  sha256: string;
}

/**
 * The file's bytes, opened only once they are read. `step.artifact` reads its data only when
 * it writes the artifact; on a replay it answers the stored one and never reads, so a replay
 * neither reads the file again nor leaves a connection open.
 */
async function* fileBytes(files: TaskFiles, ref: FileRef): AsyncGenerator<Uint8Array> {
  const opened = await files.open(ref);
  yield* opened.stream;
}

/**
 * `demo.file`: files in, artifacts out, in one step. Streams the referenced file into an
 * artifact named `copy` (never holding it in memory) and answers its size and SHA-256. A file
 * that is not the tenant's, a refused URL or one past `limits.file_max_bytes` fails the step at
 * once; a read cut short is retried. Copy it as the start of a task that transforms a file:
 * put the transformation between the read and the artifact.
 */
export const demoFile = defineTask<DemoFileInput, DemoFileOutput>(
  "demo.file",
  async (input, step, ctx) => {
    const files = ctx.files;
    if (!files) throw new NonRetriableError("This engine gives tasks no ctx.files to read the file with.");
    const copy = await step.artifact("copy", fileBytes(files, input), {
      contentType: "application/octet-stream",
    });
    return { artifact: copy.name, size: copy.size, sha256: copy.sha256 };
  },
  {
    validate(input) {
      if (!asFileRef(input)) throw new Error('give {"file_id": "file_…"} or {"url": "https://…"}');
    },
  },
);
