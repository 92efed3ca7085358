// Vitest config for ferry's conformance and real-client tests.
// The suite's own CLI finds no test files when installed under node_modules (vitest
// excludes node_modules), so conformance.test.mjs calls runConformanceTests() itself and
// this config includes our own test files only.
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["*.test.mjs"],
    root: import.meta.dirname,
    // One file per run (run.sh picks the file); no parallel files fighting for the servers.
    fileParallelism: false,
    testTimeout: 5000,
    hookTimeout: 10000,
  },
})
