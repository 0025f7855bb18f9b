import { LonghaulError } from "./errors.ts";

/** Named things a node knows: task types and providers. Every worker node must know the task types it advances. */
export class Registry<T extends { name: string }> {
  private readonly items = new Map<string, T>();
  constructor(
    private readonly what: string,
    private readonly code: "TASK_TYPE_UNKNOWN" | "PROVIDER_UNKNOWN",
  ) {}
  add(item: T): this {
    if (this.items.has(item.name))
      throw new LonghaulError("CONFIG_INVALID", `${this.what} "${item.name}" is registered twice.`);
    this.items.set(item.name, item);
    return this;
  }
  find(name: string): T | undefined {
    return this.items.get(name);
  }
  get(name: string): T {
    const it = this.items.get(name);
    if (!it) {
      const known = [...this.items.keys()].join(", ") || "none";
      throw new LonghaulError(this.code, `Unknown ${this.what} "${name}". Known: ${known}.`);
    }
    return it;
  }
  names(): string[] {
    return [...this.items.keys()];
  }
}
