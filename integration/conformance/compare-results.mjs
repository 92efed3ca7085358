// Compares two vitest JSON reports of the conformance suite, one per target.
// Usage: node compare-results.mjs A.json B.json [--label-a direct] [--label-b via-ferry]
// Prints passed/failed/skipped totals per target, the tests that fail on both (the suite is
// newer than the reference server), and every test whose outcome differs. Exits 1 when any
// test's outcome differs, or a test ran on one side only; 0 otherwise.
import { readFileSync } from "node:fs"

const args = process.argv.slice(2)
const files = args.filter((a, i) => !a.startsWith("--") && !(args[i - 1] ?? "").startsWith("--"))
function opt(name, fallback) {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : fallback
}
if (files.length !== 2) {
  console.error("usage: compare-results.mjs A.json B.json [--label-a A] [--label-b B]")
  process.exit(2)
}
const labels = [opt("--label-a", "a"), opt("--label-b", "b")]

// Map of "describe > ... > test" -> {status, message}. Repeated names get " #n".
function load(file) {
  const report = JSON.parse(readFileSync(file, "utf8"))
  const results = new Map()
  for (const suiteFile of report.testResults ?? []) {
    if ((suiteFile.assertionResults ?? []).length === 0 && suiteFile.status === "failed") {
      // The file itself failed to load: no per-test data.
      results.set(`<file ${suiteFile.name}>`, { status: "failed", message: suiteFile.message })
    }
    for (const t of suiteFile.assertionResults ?? []) {
      const base = [...(t.ancestorTitles ?? []), t.title].join(" > ")
      let name = base
      for (let n = 2; results.has(name); n++) name = `${base} #${n}`
      const message = (t.failureMessages ?? [])[0]?.split("\n")[0] ?? ""
      results.set(name, { status: t.status, message, duration: t.duration })
    }
  }
  return results
}

function totals(results) {
  const t = { passed: 0, failed: 0, skipped: 0 }
  for (const r of results.values()) {
    if (r.status === "passed") t.passed++
    else if (r.status === "failed") t.failed++
    else t.skipped++
  }
  return t
}

const [a, b] = files.map(load)
const [ta, tb] = [totals(a), totals(b)]
const width = Math.max(...labels.map((l) => l.length))
for (const [label, t, r] of [[labels[0], ta, a], [labels[1], tb, b]]) {
  console.log(
    `conformance totals ${label.padEnd(width)}: passed=${t.passed} failed=${t.failed} ` +
      `skipped=${t.skipped} total=${r.size}`
  )
}

const names = new Set([...a.keys(), ...b.keys()])
const bothFailed = []
const diffs = []
for (const name of names) {
  const ra = a.get(name)
  const rb = b.get(name)
  const sa = ra?.status ?? "missing"
  const sb = rb?.status ?? "missing"
  if (sa !== sb) {
    diffs.push({ name, sa, sb, ma: ra?.message ?? "", mb: rb?.message ?? "", da: ra?.duration, db: rb?.duration })
  }
  else if (sa === "failed") bothFailed.push(name)
}

if (bothFailed.length > 0) {
  console.log(`failing on both targets (${bothFailed.length}, reference server behaviour):`)
  for (const n of bothFailed) console.log(`  = ${n}`)
}
// How long a differing case ran on each side: a case near its budget on both is load, not the
// proxy.
function took(ms) {
  return typeof ms === "number" ? ` in ${Math.round(ms)} ms` : ""
}
if (diffs.length === 0) {
  console.log(`conformance: identical outcomes for all ${names.size} tests`)
  process.exit(0)
}
console.log(`conformance: ${diffs.length} test(s) differ between ${labels[0]} and ${labels[1]}:`)
for (const d of diffs) {
  console.log(`  ! ${d.name}`)
  console.log(`      ${labels[0]}: ${d.sa}${took(d.da)}${d.ma ? ` (${d.ma})` : ""}`)
  console.log(`      ${labels[1]}: ${d.sb}${took(d.db)}${d.mb ? ` (${d.mb})` : ""}`)
}
process.exit(1)
