// A small GitHub App bot under Node, unmodified @octokit/auth-app and @octokit/rest against the
// emulator's GitHub Enterprise Server layout (`<base>/api/v3`), as probot runs one with GHE_HOST
// (run by test_app_octokit.py). The bot receives the signed `pull_request` webhook of a PR a user
// opens, checks the signature, signs in as the installation the payload names and comments as
// itself; then octokit's App sign-in meets a server clock 5 minutes behind its own, reads the
// server's `Date` and retries once with the difference accounted for.
// Usage: node app_bot_flow.mjs <api base (…/api/v3)> <admin url>; non-zero with a message on failure.
import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { createAppAuth } from "@octokit/auth-app"
import { Octokit } from "@octokit/rest"

const [base, admin] = process.argv.slice(2)
const SECRET = "hook-secret"
const check = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`) }
const post = async (url, body) => {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

// the bot's webhook receiver: verifies X-Hub-Signature-256 as GitHub's docs show
let delivered
const received = new Promise((resolve) => { delivered = resolve })
const events = []
const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    const body = Buffer.concat(chunks)
    const expected = Buffer.from("sha256=" + createHmac("sha256", SECRET).update(body).digest("hex"))
    const given = Buffer.from(req.headers["x-hub-signature-256"] || "")
    const signed = given.length === expected.length && timingSafeEqual(given, expected)
    res.writeHead(signed ? 204 : 401).end()
    if (!signed) return
    const delivery = { event: req.headers["x-github-event"], headers: req.headers, payload: JSON.parse(body) }
    events.push(`${delivery.event}.${delivery.payload.action}`)
    if (delivery.event === "pull_request") delivered(delivery)
  })
})
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const hook = `http://127.0.0.1:${server.address().port}/hook`

try {
  check((await post(`${admin}/reset`, {})).status === 200, "reset")
  check((await post(`${admin}/github/repositories`, {
    owner: "octo", name: "demo", files: { main: { "README.md": "# demo\n" }, topic: { "README.md": "# demo\n", "new.txt": "new\n" } },
  })).status === 201, "seed")
  const made = await post(`${admin}/github/apps`, {
    slug: "my-bot", permissions: { issues: "write", pull_requests: "write", contents: "read" },
    events: ["pull_request"], webhook_url: hook, webhook_secret: SECRET, installations: [{ account: "octo" }],
  })
  check(made.status === 201, `create the App: ${JSON.stringify(made.body)}`)
  const { app, private_key: privateKey } = made.body

  // a user opens a pull request
  const user = new Octokit({ baseUrl: base, auth: "tok-ada" })
  const { data: pull } = await user.rest.pulls.create({ owner: "octo", repo: "demo", title: "Add new.txt", head: "topic", base: "main" })

  const { event, headers, payload } = await Promise.race([received, new Promise((_, fail) => setTimeout(() => fail(new Error("no webhook in 10 s")), 10000))])
  check(JSON.stringify(events) === '["installation.created","pull_request.opened"]', `deliveries: ${events}`)
  check(event === "pull_request" && payload.action === "opened" && payload.pull_request.number === pull.number, "the PR's webhook")
  check(headers["x-github-hook-installation-target-type"] === "integration" && headers["x-github-hook-installation-target-id"] === String(app.id), "an App's delivery headers")
  check(payload.installation.id === made.body.installations[0].id && typeof payload.installation.node_id === "string", "installation {id, node_id}")
  check(payload.repository.url === `${base}/repos/octo/demo`, `URLs under /api/v3: ${payload.repository.url}`)

  // the bot answers as the installation the payload names
  const bot = new Octokit({ baseUrl: base, authStrategy: createAppAuth, auth: { appId: app.id, privateKey, installationId: payload.installation.id } })
  const { data: comment } = await bot.rest.issues.createComment({
    owner: payload.repository.owner.login, repo: payload.repository.name, issue_number: payload.pull_request.number, body: "Thanks, checking it.",
  })
  check(comment.user.login === "my-bot[bot]" && comment.user.type === "Bot", `the bot comments as itself: ${comment.user.login}`)
  const { data: comments } = await user.rest.issues.listComments({ owner: "octo", repo: "demo", issue_number: pull.number })
  check(comments.length === 1 && comments[0].user.login === "my-bot[bot]", "the user sees the bot's comment")

  // the server's clock runs 5 minutes behind: the first JWT is refused, octokit corrects and retries
  check((await post(`${admin}/clock`, { set: Date.now() - 5 * 60 * 1000 })).status === 200, "clock")
  const asApp = new Octokit({ baseUrl: base, authStrategy: createAppAuth, auth: { appId: app.id, privateKey }, log: { warn: () => {}, debug: () => {}, info: () => {}, error: () => {} } })
  const { data: me } = await asApp.rest.apps.getAuthenticated()
  check(me.slug === "my-bot", "getAuthenticated after the retry")
  const journal = await (await fetch(`${admin}/requests?operationId=apps/get-authenticated`)).json()
  const statuses = journal.requests.map((entry) => entry.status)
  check(JSON.stringify(statuses) === "[401,200]", `refused once, then signed in: ${statuses}`)
  console.log("app bot flow ok")
} finally {
  server.close()
}
