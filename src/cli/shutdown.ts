/** Runs `close` once on SIGINT or SIGTERM, then exits. */
export function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  const handler = () => {
    if (closing) process.exit(1);
    closing = true;
    close().then(
      () => process.exit(0),
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}
