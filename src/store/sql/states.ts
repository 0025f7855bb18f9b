/**
 * `column = 'a'` or `column IN ('a', 'b')`: a set of the domain's states (src/core) as the
 * condition of a statement, rendered when the statement's text is built, once, so the rule
 * stays in core and the statement stays one atomic statement. The states come from code,
 * never from a request.
 */
export function inStates(column: string, states: readonly string[]): string {
  if (states.length === 0) throw new Error(`No states to render for ${column}.`);
  const quoted = states.map((s) => `'${s.replaceAll("'", "''")}'`);
  return quoted.length === 1 ? `${column} = ${quoted[0]}` : `${column} IN (${quoted.join(", ")})`;
}
