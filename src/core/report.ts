/**
 * A PDF report a task renders with `step.report` (README "Reports"): a title, a summary, key
 * points, sections and the sources they came from. Rendered outside core (`src/reports`) and
 * stored as an artifact, so it is durable and replayed like one.
 */

/** Where a statement of the report came from: a chunk of the index, a file, a page, lines. */
export interface ReportSource {
  label: string;
  chunk_id?: string;
  file_id?: string;
  page?: number;
  lines?: { start: number; end: number };
}

export interface ReportSection {
  heading: string;
  body: string;
}

export interface ReportSpec {
  title: string;
  summary?: string;
  keyPoints?: string[];
  sections?: ReportSection[];
  sources?: ReportSource[];
}

export interface ReportOptions {
  /** The artifact's name. Default `<id>.pdf`. */
  name?: string;
}

/** The characters a report may hold in all, so one report cannot make a PDF of any size. */
export const REPORT_MAX_CHARS = 1_000_000;

/** The artifact name of `step.report(id, …)`. */
export function reportArtifactName(id: string, options: ReportOptions = {}): string {
  return options.name ?? `${id}.pdf`;
}

const isText = (v: unknown): v is string => typeof v === "string";
const isPositiveInt = (v: unknown) => Number.isInteger(v) && (v as number) >= 1;

/** Why `spec` cannot be rendered as a report, or null. */
export function reportProblem(spec: unknown): string | null {
  const s = spec as Partial<ReportSpec> | null;
  if (s === null || typeof s !== "object") return "the report must be an object with a title";
  if (!isText(s.title) || s.title.trim().length === 0) return '"title" must be a non-empty string';
  if (s.summary !== undefined && !isText(s.summary)) return '"summary" must be a string';
  if (s.keyPoints !== undefined && !(Array.isArray(s.keyPoints) && s.keyPoints.every(isText)))
    return '"keyPoints" must be an array of strings';
  if (
    s.sections !== undefined &&
    !(Array.isArray(s.sections) && s.sections.every((x) => x && isText(x.heading) && isText(x.body)))
  )
    return '"sections" must be an array of {heading, body} strings';
  if (s.sources !== undefined) {
    if (!Array.isArray(s.sources)) return '"sources" must be an array';
    for (const [i, src] of s.sources.entries()) {
      if (!src || !isText(src.label)) return `sources[${i}].label must be a string`;
      if (src.chunk_id !== undefined && !isText(src.chunk_id))
        return `sources[${i}].chunk_id must be a string`;
      if (src.file_id !== undefined && !isText(src.file_id)) return `sources[${i}].file_id must be a string`;
      if (src.page !== undefined && !isPositiveInt(src.page))
        return `sources[${i}].page must be an integer of at least 1`;
      if (
        src.lines !== undefined &&
        !(
          isPositiveInt(src.lines?.start) &&
          isPositiveInt(src.lines?.end) &&
          src.lines.end >= src.lines.start
        )
      )
        return `sources[${i}].lines must be {start, end}, 1-based, start <= end`;
    }
  }
  if (reportChars(s as ReportSpec) > REPORT_MAX_CHARS)
    return `the report holds more than ${REPORT_MAX_CHARS} characters`;
  return null;
}

function reportChars(s: ReportSpec): number {
  let n = s.title.length + (s.summary?.length ?? 0);
  for (const p of s.keyPoints ?? []) n += p.length;
  for (const x of s.sections ?? []) n += x.heading.length + x.body.length;
  for (const x of s.sources ?? []) n += x.label.length;
  return n;
}

/** How a source is cited in the report: its label, then where it lies. */
export function sourceLocation(src: ReportSource): string {
  const parts: string[] = [];
  if (src.page !== undefined) parts.push(`page ${src.page}`);
  if (src.lines !== undefined)
    parts.push(
      src.lines.start === src.lines.end
        ? `line ${src.lines.start}`
        : `lines ${src.lines.start}-${src.lines.end}`,
    );
  if (src.file_id !== undefined) parts.push(`file ${src.file_id}`);
  if (src.chunk_id !== undefined) parts.push(`chunk ${src.chunk_id}`);
  return parts.join(", ");
}
