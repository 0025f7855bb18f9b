/**
 * Loads a broker client, an optional dependency of longhaul, on a sink's first publish. An app
 * installed with `--omit=optional` has none: the delivery's error then says what to install
 * instead of quoting the module resolver.
 */
export async function loadClient<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") throw err;
    throw new Error(
      `${name} is not installed; it is an optional dependency of longhaul that this sink needs. Run \`npm install ${name}\`.`,
      { cause: err },
    );
  }
}
