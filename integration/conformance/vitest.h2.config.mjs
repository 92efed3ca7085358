// Vitest config for the conformance suite through ferry over TLS + HTTP/2 (run.sh --h2-tls):
// the same as vitest.config.mjs, with h2-setup.mjs making every fetch speak HTTP/2.
import { defineConfig, mergeConfig } from "vitest/config"

import base from "./vitest.config.mjs"

export default mergeConfig(
  base,
  defineConfig({
    test: {
      setupFiles: ["./h2-setup.mjs"],
    },
  }),
)
