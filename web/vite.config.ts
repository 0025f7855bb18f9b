import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// The dashboard is served by the API server from web/dist (src/http/dashboard-routes.ts):
// one page, hashed assets under assets/, nothing loaded from elsewhere.
export default defineConfig({
  root: import.meta.dirname,
  base: "./",
  plugins: [preact()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
