// @octokit/plugin-throttling, unmodified, meets the emulator's limits (run by
// test_rate_limit_clients.py): a secondary limit (the github_rate_limited preset) and a primary
// one (a full window), each reaching the handler the plugin has for it.
// Usage: node octokit_throttling.mjs <base url> <admin url>; exits non-zero on failure.
import { Octokit } from "@octokit/rest"
import { throttling } from "@octokit/plugin-throttling"

const [base, admin] = process.argv.slice(2)
const check = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`) }
const call = (method, url, body) => fetch(url, {
  method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const seen = []
const Throttled = Octokit.plugin(throttling)
const octokit = new Throttled({
  baseUrl: base, auth: "throttled-token",
  throttle: {
    onRateLimit: (retryAfter, options) => {
      seen.push({ kind: "primary", method: options.method, url: options.url, retryAfter })
      return false  // do not wait: the test looks at what the plugin saw
    },
    onSecondaryRateLimit: (retryAfter, options) => {
      seen.push({ kind: "secondary", method: options.method, url: options.url, retryAfter })
      return false
    },
  },
})
const repo = { owner: "octo", repo: "demo" }

check((await call("PUT", `${admin}/github/rate-limits`, { core: 3 })).ok, "rate limits")
const { data: limits } = await octokit.rest.rateLimit.get()
check(limits.rate.limit === 3 && limits.resources.core.remaining === 3, JSON.stringify(limits.rate))

check((await call("POST", `${admin}/faults`, { preset: "github_rate_limited" })).ok, "preset")
try {
  await octokit.rest.git.createRef({ ...repo, ref: "refs/heads/x", sha: "a".repeat(40) })
  check(false, "the preset's write must fail")
} catch (error) {
  check(error.status === 429, `secondary status ${error.status}`)
}

await octokit.rest.repos.get(repo)
await octokit.rest.repos.get(repo)
const last = await octokit.rest.repos.get(repo)
check(last.headers["x-ratelimit-remaining"] === "0", "the window is full")
try {
  await octokit.rest.repos.get(repo)
  check(false, "a full window must refuse")
} catch (error) {
  check(error.status === 403 && /^API rate limit exceeded for user/.test(error.response.data.message),
        `primary: ${error.status} ${JSON.stringify(error.response?.data)}`)
}
console.log(JSON.stringify({ seen }))
