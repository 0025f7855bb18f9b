import { Registry } from "../core/registry.ts";
import type { TaskType } from "../core/task-type.ts";
import type { Provider } from "../providers/provider.ts";

export const taskTypeRegistry = (types: TaskType[] = []) => {
  const r = new Registry<TaskType>("task type", "TASK_TYPE_UNKNOWN");
  for (const t of types) r.add(t);
  return r;
};

export const providerRegistry = (providers: Provider[] = []) => {
  const r = new Registry<Provider>("provider", "PROVIDER_UNKNOWN");
  for (const p of providers) r.add(p);
  return r;
};
