/**
 * The units a document is cut along before chunks are packed: line ranges (1-based,
 * inclusive) that a chunk never splits unless one alone is longer than a chunk. `breakBefore`
 * marks a unit that starts a chunk of its own (a Markdown heading).
 */
export interface Unit {
  start: number;
  end: number;
  breakBefore: boolean;
}

const HEADING = /^ {0,3}#{1,6}(?:\s|$)/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Text and Markdown: each heading line is a unit that breaks, each paragraph (a run of
 * non-blank lines) a unit, and a fenced code block one unit whatever blank lines or `#` it holds.
 */
export function proseUnits(lines: readonly string[]): Unit[] {
  const units: Unit[] = [];
  let open: Unit | null = null;
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const n = i + 1;
    if (open !== null && fence !== null) {
      open.end = n;
      if (line.trimStart().startsWith(fence)) {
        units.push(open);
        open = null;
        fence = null;
      }
      continue;
    }
    const opening = FENCE.exec(line);
    const heading = HEADING.test(line);
    if (opening || heading || line.trim().length === 0) {
      if (open) units.push(open);
      open = null;
    }
    if (opening) {
      fence = opening[1]!.slice(0, 3);
      open = { start: n, end: n, breakBefore: false };
    } else if (heading) {
      units.push({ start: n, end: n, breakBefore: true });
    } else if (line.trim().length > 0) {
      if (open) open.end = n;
      else open = { start: n, end: n, breakBefore: false };
    }
  }
  if (open) units.push(open);
  return units;
}

// A top-level definition of TypeScript, JavaScript or Python, at column 0.
const DEFINITION =
  /^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\b|class\b|interface\b|type\s+\w|enum\b|const\b|let\b|var\b|namespace\b|def\b)/;
// Lines that belong to the definition after them: comments and decorators at column 0.
const LEAD = /^(?:\/\/|\/\*|\s\*|#|@[\w.])/;

/**
 * Code: a unit per top-level definition, from the comments and decorators just above it to
 * the line before the next one (blank lines inside stay inside); what precedes the first
 * (imports) is a unit too. A line heuristic: cheap, and wrong only for odd formatting.
 */
export function codeUnits(lines: readonly string[]): Unit[] {
  const starts: number[] = [];
  let lead: number | null = null;
  lines.forEach((line, i) => {
    if (DEFINITION.test(line)) {
      starts.push(lead ?? i);
      lead = null;
    } else if (LEAD.test(line)) {
      lead ??= i;
    } else {
      lead = null;
    }
  });
  if (starts[0] !== 0) starts.unshift(0);
  const units: Unit[] = [];
  starts.forEach((s, k) => {
    let end = (starts[k + 1] ?? lines.length) - 1;
    let start = s;
    while (end >= start && lines[end]!.trim().length === 0) end--;
    while (start <= end && lines[start]!.trim().length === 0) start++;
    if (start <= end) units.push({ start: start + 1, end: end + 1, breakBefore: false });
  });
  return units;
}
