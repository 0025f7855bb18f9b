/**
 * A field of a task's input by its dotted name (`customer.name`), or undefined: what an
 * approval's `show` names, read the same way by its page and by its messages.
 */
export function inputField(input: unknown, name: string): unknown {
  let v: unknown = input;
  for (const part of name.split(".")) {
    v =
      typeof v === "object" && v !== null && Object.hasOwn(v, part)
        ? (v as Record<string, unknown>)[part]
        : undefined;
  }
  return v;
}
