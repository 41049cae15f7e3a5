// The PyGithub consumer flow again, with @octokit/rest unmodified (run by test_octokit.py).
// Usage: node octokit_flow.mjs <base url> <admin url>; exits non-zero with a message on failure.
import { Octokit } from "@octokit/rest"

const [base, admin] = process.argv.slice(2)
const A = "a".repeat(40), B = "b".repeat(40), C = "c".repeat(40), D = "d".repeat(40)
const check = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`) }
const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

check((await post(`${admin}/reset`, {})).ok, "reset")
const seeded = await post(`${admin}/github/repositories`, {
  owner: "synthetic-org", name: "octo", default_branch: "main",
  commits: [{ sha: A, parents: [] }, { sha: B, parents: [A] }, { sha: C, parents: [B] }, { sha: D, parents: [A] }],
  branches: { main: A },
})
check(seeded.status === 201, "seed")

const octokit = new Octokit({ baseUrl: base, auth: "synthetic-token" })
const repo = { owner: "synthetic-org", repo: "octo" }
const { data: repository } = await octokit.rest.repos.get(repo)
check(repository.full_name === "synthetic-org/octo" && repository.default_branch === "main", "repos.get")

await octokit.rest.git.createRef({ ...repo, ref: "refs/heads/topic", sha: B })
const { data: moved } = await octokit.rest.git.updateRef({ ...repo, ref: "heads/topic", sha: C })
check(moved.object.sha === C, "updateRef fast-forward")
try {
  await octokit.rest.git.updateRef({ ...repo, ref: "heads/topic", sha: D })
  check(false, "non-fast-forward must fail")
} catch (error) {
  check(error.status === 422 && error.response.data.message === "Update is not a fast forward", "422 body")
}
const { data: got } = await octokit.rest.git.getRef({ ...repo, ref: "heads/topic" })
check(got.object.sha === C, "getRef")

for (let i = 0; i < 33; i++) {
  await octokit.rest.git.createRef({ ...repo, ref: `refs/heads/t${i}`, sha: B })
  await octokit.rest.pulls.create({ ...repo, title: `PR ${i}`, head: `t${i}`, base: "main" })
}
const all = await octokit.paginate(octokit.rest.pulls.list, { ...repo, state: "open", per_page: 30 })
check(all.length === 33 && all[0].number === 33 && all[32].number === 1, `paginate: ${all.length}`)

const { data: edited } = await octokit.rest.pulls.update({ ...repo, pull_number: 5, title: "Edited", body: "", state: "closed" })
check(edited.title === "Edited" && edited.body === null && edited.state === "closed", "pulls.update")
const { data: fetched } = await octokit.rest.pulls.get({ ...repo, pull_number: 5 })
check(fetched.closed_at !== null && fetched.head.ref === "t4", "pulls.get")

check((await post(`${admin}/faults`, { preset: "github_pr_create_accepted_drop" })).status === 201, "preset")
let lost = false
try {
  await octokit.rest.pulls.create({ ...repo, title: "lost answer", head: "topic", base: "main" })
} catch (error) {
  lost = true
}
check(lost, "the create answer must be dropped")
const { data: found } = await octokit.rest.pulls.list({ ...repo, head: "synthetic-org:topic", base: "main" })
check(found.length === 1 && found[0].title === "lost answer", "recovered by listing")
console.log("octokit flow ok")
