import { LonghaulError } from "./errors.ts";

/**
 * A named artifact a task stored with `step.artifact`: its bytes live in the blob store under
 * `blobKey`, written before the row commits (ARCHITECTURE §3.8, §4.10). A task has at most one
 * artifact of each name; the row and the step's outcome are stored in one transaction, so a
 * replay answers the stored artifact and never writes it twice.
 */
export interface ArtifactRow {
  taskId: string;
  tenantId: string;
  name: string;
  contentType: string;
  size: number;
  /** Hex SHA-256 of the bytes. */
  sha256: string;
  blobKey: string;
  createdAt: number;
}

/** What `step.artifact` answers, and replays: the stored artifact's name, size, hash and type. */
export interface ArtifactInfo {
  name: string;
  size: number;
  sha256: string;
  content_type: string;
}

/** The longest artifact name, in characters. */
export const ARTIFACT_NAME_MAX_LENGTH = 200;

/** Why `name` cannot name an artifact (1 to 200 characters, no `/` or control character), or null. */
export function artifactNameProblem(name: unknown): string | null {
  if (typeof name !== "string" || name.length === 0 || name.length > ARTIFACT_NAME_MAX_LENGTH) {
    return `an artifact name must be a string of 1 to ${ARTIFACT_NAME_MAX_LENGTH} characters`;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f/]/.test(name)) {
    return `the artifact name ${JSON.stringify(name.slice(0, 80))} has a '/' or a control character`;
  }
  return null;
}

/** The step id under which `step.artifact(name, …)` is stored: its own namespace, apart from other steps. */
export function artifactStepId(name: string): string {
  return `artifact:${name}`;
}

/** The blob key of an artifact's bytes: one key per write, under its tenant and task. */
export function artifactBlobKey(tenantId: string, taskId: string, writeId: string): string {
  return `artifacts/${tenantId}/${taskId}/${writeId}`;
}

/** What `step.artifact` answers for a stored row. */
export function artifactInfo(a: ArtifactRow): ArtifactInfo {
  return { name: a.name, size: a.size, sha256: a.sha256, content_type: a.contentType };
}

export function artifactNotFound(taskId: string, name: string): LonghaulError {
  return new LonghaulError("ARTIFACT_NOT_FOUND", `Task ${taskId} has no artifact ${JSON.stringify(name)}.`);
}
