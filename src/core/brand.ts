/**
 * Error classes that keep `instanceof` true across copies of longhaul. An app, a global CLI, a
 * monorepo or pnpm can load two copies of the package; a `NonRetriableError` thrown by task
 * code from one copy is then not an instance of the other copy's class, and would be retried.
 * Each branded class marks its instances with a name under a `Symbol.for` key, which every copy
 * shares, and answers `instanceof` by that mark. A user's subclass keeps the ordinary check
 * for itself, and is still an instance of the branded class it extends.
 */
const BRANDS = Symbol.for("longhaul.error-brands");

type Branded = { [BRANDS]?: string[] };

/** Marks `instance` as one of the class called `name` (call it in the class's constructor). */
export function brand(instance: object, name: string): void {
  const marks = (instance as Branded)[BRANDS];
  if (marks) marks.push(name);
  else Object.defineProperty(instance, BRANDS, { value: [name], enumerable: false });
}

/**
 * `instanceof` for a branded class: `owner` is the class, `name` its brand, `ctor` the class
 * the check was made against (`this` of the static method).
 */
export function isInstance(ctor: unknown, owner: unknown, name: string, value: unknown): boolean {
  if (ctor !== owner) return Function.prototype[Symbol.hasInstance].call(ctor, value);
  if (typeof value !== "object" || value === null) return false;
  return (value as Branded)[BRANDS]?.includes(name) === true;
}
