"""GraphQL and REST over one state: pull requests, checks, reviews, merges, issues and labels
made by either are the other's, node ids are REST's `node_id`s, and GraphQL refuses what REST
refuses. Every answer is checked against the schema and its query (conftest.py)."""
import pytest

TOKEN = {"Authorization": "token tok-ada"}
GRACE = {"Authorization": "token tok-grace"}
PULL = """query PullRequestByNumber($owner: String!, $repo: String!, $number: Int!) {
  repository(owner: $owner, name: $repo) { pullRequest(number: $number) {
    id number title state isDraft headRefOid mergeable mergeStateStatus reviewDecision
    isMergeQueueEnabled mergeQueueEntry { id }
    commits(last: 1) { totalCount nodes { commit { oid statusCheckRollup { state
      contexts(first: 10) { totalCount nodes { __typename
        ... on StatusContext { context state isRequired(pullRequestNumber: $number) }
        ... on CheckRun { name status conclusion isRequired(pullRequestNumber: $number) }
      } } } } } }
    reviews(first: 10) { nodes { author { login } state } }
    labels(first: 10) { nodes { name } } } } }"""


@pytest.fixture
def world(gh):
    gh.post("/__admin/github/repositories", {"owner": "octo", "name": "demo", "files": {
        "main": {"README.md": "# demo\n"},
        "topic": {"README.md": "# demo\n", "feature.txt": "new\n"}}}, 201)
    gh.app.put_json("/__admin/credentials", [{"credential": "tok-ada", "user": "ada"},
                                             {"credential": "tok-grace", "user": "grace"}])
    return gh


def ql(world, query, variables=None, headers=TOKEN):
    res = world.app.post_json("/graphql", {"query": query, "variables": variables or {}},
                              headers=headers)
    return res.json


def pull_view(world):
    return ql(world, PULL, {"owner": "octo", "repo": "demo", "number": 1})["data"][
        "repository"]["pullRequest"]


def repo_id(world):
    return ql(world, '{ repository(owner: "octo", name: "demo") { id } }')["data"][
        "repository"]["id"]


def create(world, **extra):
    mutation = """mutation PullRequestCreate($input: CreatePullRequestInput!) {
      createPullRequest(input: $input) { pullRequest { id number url } } }"""
    return ql(world, mutation, {"input": {"repositoryId": repo_id(world), "baseRefName": "main",
                                          "headRefName": "topic", "title": "Add it",
                                          **extra}})


def test_a_pull_request_graphql_opens_is_rests_and_its_id_is_rests_node_id(world):
    made = create(world, body="Why.", draft=True)["data"]["createPullRequest"]["pullRequest"]
    rest = world.get("/repos/octo/demo/pulls/1", headers=TOKEN).json
    assert made == {"id": rest["node_id"], "number": 1, "url": rest["html_url"]}
    assert (rest["title"], rest["body"], rest["draft"], rest["user"]["login"]) == (
        "Add it", "Why.", True, "ada")
    node = ql(world, "query($id: ID!) { node(id: $id) { __typename"
                     " ... on PullRequest { number isDraft } } }", {"id": rest["node_id"]})
    assert node["data"]["node"] == {"__typename": "PullRequest", "number": 1, "isDraft": True}
    again = create(world)
    assert again["data"]["createPullRequest"] is None
    assert again["errors"][0]["type"] == "UNPROCESSABLE"
    assert again["errors"][0]["message"] == "A pull request already exists for octo:topic."


def test_checks_statuses_and_reviews_as_statusCheckRollup_and_reviewDecision(world):
    world.post("/repos/octo/demo/pulls", {"title": "REST", "head": "topic", "base": "main"},
               headers=TOKEN)
    world.app.put_json("/repos/octo/demo/branches/main/protection", {
        "required_status_checks": {"strict": False, "contexts": ["ci"]},
        "enforce_admins": True, "restrictions": None,
        "required_pull_request_reviews": {"required_approving_review_count": 1}},
        headers=TOKEN)
    view = pull_view(world)
    assert view["commits"]["nodes"][0]["commit"]["statusCheckRollup"] is None
    assert (view["mergeStateStatus"], view["reviewDecision"]) == ("BLOCKED", "REVIEW_REQUIRED")
    assert (view["isMergeQueueEnabled"], view["mergeQueueEntry"]) == (False, None)
    sha = view["headRefOid"]
    world.post("/repos/octo/demo/check-runs", {"name": "ci", "head_sha": sha,
                                               "status": "in_progress"}, headers=TOKEN)
    world.post(f"/repos/octo/demo/statuses/{sha}", {"state": "failure", "context": "lint"},
               headers=TOKEN)
    rollup = pull_view(world)["commits"]["nodes"][0]["commit"]["statusCheckRollup"]
    assert rollup["state"] == "FAILURE"
    assert rollup["contexts"]["nodes"] == [
        {"__typename": "StatusContext", "context": "lint", "state": "FAILURE",
         "isRequired": False},
        {"__typename": "CheckRun", "name": "ci", "status": "IN_PROGRESS", "conclusion": None,
         "isRequired": True}]
    world.post("/repos/octo/demo/pulls/1/reviews", {"event": "REQUEST_CHANGES", "body": "No."},
               headers=GRACE)
    assert pull_view(world)["reviewDecision"] == "CHANGES_REQUESTED"
    world.post("/repos/octo/demo/pulls/1/reviews", {"event": "APPROVE"}, headers=GRACE)
    view = pull_view(world)
    assert view["reviewDecision"] == "APPROVED"
    assert [r["state"] for r in view["reviews"]["nodes"]] == ["CHANGES_REQUESTED", "APPROVED"]


MERGE = """mutation PullRequestMerge($input: MergePullRequestInput!) {
  mergePullRequest(input: $input) { pullRequest { state merged mergeCommit { oid } } } }"""


def test_merge_pull_request_refuses_as_rest_does_then_rebases(world):
    """(gh's tests merge with `--squash` and `--merge`.)"""
    node = create(world)["data"]["createPullRequest"]["pullRequest"]["id"]
    stale = ql(world, MERGE, {"input": {"pullRequestId": node, "mergeMethod": "REBASE",
                                        "expectedHeadOid": "0" * 40}})
    assert stale["errors"][0]["message"] == \
        "Head branch was modified. Review and try the merge again."
    done = ql(world, MERGE, {"input": {"pullRequestId": node, "mergeMethod": "REBASE"}})
    merged = done["data"]["mergePullRequest"]["pullRequest"]
    assert (merged["state"], merged["merged"]) == ("MERGED", True)
    main = world.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"]
    assert merged["mergeCommit"]["oid"] == main
    assert world.get("/repos/octo/demo/pulls/1").json["merged"] is True
    closed = ql(world, MERGE, {"input": {"pullRequestId": node, "mergeMethod": "SQUASH"}})
    assert closed["errors"][0]["message"] == "Pull Request is not mergeable"
    journal = world.get("/__admin/requests").json["requests"]
    merges = [e for e in journal if e["operationId"] == "graphql/mutation/PullRequestMerge"]
    assert [e.get("accepted", False) for e in merges] == [False, True, False]


def test_issues_comments_labels_and_close_through_graphql(world):
    rid = repo_id(world)
    made = ql(world, """mutation IssueCreate($input: CreateIssueInput!) {
        createIssue(input: $input) { issue { id number url } } }""",
              {"input": {"repositoryId": rid, "title": "Broken", "body": "It is."}})
    issue = made["data"]["createIssue"]["issue"]
    rest = world.get("/repos/octo/demo/issues/1").json
    assert (issue["id"], issue["number"]) == (rest["node_id"], 1)
    world.post("/repos/octo/demo/labels", {"name": "bug", "color": "ff0000"}, headers=TOKEN)
    label = ql(world, '{ repository(owner: "octo", name: "demo") { label(name: "bug")'
                      ' { id name color } } }')["data"]["repository"]["label"]
    ql(world, """mutation($input: AddLabelsToLabelableInput!) {
        addLabelsToLabelable(input: $input) { clientMutationId } }""",
       {"input": {"labelableId": issue["id"], "labelIds": [label["id"]]}})
    ql(world, """mutation($input: AddCommentInput!) {
        addComment(input: $input) { commentEdge { node { body url } } } }""",
       {"input": {"subjectId": issue["id"], "body": "Seen."}})
    ql(world, """mutation($input: CloseIssueInput!) { closeIssue(input: $input) {
        issue { state stateReason } } }""", {"input": {"issueId": issue["id"],
                                                    "stateReason": "NOT_PLANNED"}})
    rest = world.get("/repos/octo/demo/issues/1").json
    assert ([lab["name"] for lab in rest["labels"]], rest["comments"], rest["state"],
            rest["state_reason"]) == (["bug"], 1, "closed", "not_planned")
    listed = ql(world, """{ repository(owner: "octo", name: "demo") {
        issues(first: 1, states: [CLOSED]) { totalCount pageInfo { hasNextPage }
          nodes { number state labels(first: 5) { nodes { name } }
            comments(first: 5) { nodes { body author { login } } } } }
        open: issues(states: [OPEN]) { totalCount } } }""")["data"]["repository"]
    assert listed["issues"] == {"totalCount": 1, "pageInfo": {"hasNextPage": False},
                                "nodes": [{"number": 1, "state": "CLOSED",
                                           "labels": {"nodes": [{"name": "bug"}]},
                                           "comments": {"nodes": [{"body": "Seen.",
                                                                   "author": {"login": "ada"}}]}}]}
    assert listed["open"] == {"totalCount": 0}


def test_pull_requests_connection_pages_with_cursors(world):
    for branch in ("b1", "b2", "b3"):
        world.post("/repos/octo/demo/git/refs", {
            "ref": f"refs/heads/{branch}",
            "sha": world.get("/repos/octo/demo/git/ref/heads/topic").json["object"]["sha"]},
            headers=TOKEN)
        world.post("/repos/octo/demo/pulls", {"title": branch, "head": branch, "base": "main"},
                   headers=TOKEN)
    page = """query($after: String) { repository(owner: "octo", name: "demo") {
        pullRequests(first: 2, after: $after, orderBy: {field: CREATED_AT, direction: ASC}) {
          totalCount nodes { title } pageInfo { hasNextPage endCursor } } } }"""
    first = ql(world, page)["data"]["repository"]["pullRequests"]
    assert ([n["title"] for n in first["nodes"]], first["totalCount"],
            first["pageInfo"]["hasNextPage"]) == (["b1", "b2"], 3, True)
    second = ql(world, page, {"after": first["pageInfo"]["endCursor"]})["data"][
        "repository"]["pullRequests"]
    assert ([n["title"] for n in second["nodes"]], second["pageInfo"]["hasNextPage"]) == (
        ["b3"], False)
    too_many = ql(world, '{ repository(owner: "octo", name: "demo") {'
                         ' pullRequests(first: 101) { totalCount } } }')
    assert too_many["errors"][0]["message"] == (
        "Requesting 101 records on the `pullRequests` connection exceeds the `first` limit"
        " of 100 records.")


def node_ids(world, *labels):
    """(grace's user id, the ids of labels made now) as GraphQL names them (grace's account is
    made by her first write, as any acting user's)."""
    world.post("/repos/octo/demo/issues", {"title": "Hello"}, headers=GRACE)
    for name in labels:
        world.post("/repos/octo/demo/labels", {"name": name}, headers=TOKEN)
    found = ql(world, '{ user(login: "grace") { id } repository(owner: "octo", name: "demo") {'
                      ' labels(first: 10) { nodes { id name } } } }')["data"]
    by_name = {n["name"]: n["id"] for n in found["repository"]["labels"]["nodes"]}
    return found["user"]["id"], [by_name[name] for name in labels]


def test_mutations_refuse_what_the_rules_check_as_rest_refuses_it(world):
    """No REST schema stands before a mutation: the rules' own checks refuse, in GraphQL's
    words (the same checks REST's schemas make, held to one place)."""
    blank = create(world, title="   ")
    assert (blank["data"]["createPullRequest"], blank["errors"][0]["type"]) == (
        None, "UNPROCESSABLE")
    assert world.get("/repos/octo/demo/pulls?state=all").json == []
    node = create(world)["data"]["createPullRequest"]["pullRequest"]["id"]
    empty = ql(world, """mutation($input: AddCommentInput!) { addComment(input: $input) {
        clientMutationId } }""", {"input": {"subjectId": node, "body": ""}})
    assert empty["errors"][0]["type"] == "UNPROCESSABLE"
    long = ql(world, """mutation($input: CreateIssueInput!) { createIssue(input: $input) {
        issue { number } } }""", {"input": {"repositoryId": repo_id(world), "title": "x" * 257}})
    assert long["errors"][0]["message"] == "title is too long (maximum is 256 characters)"
    on_lines = ql(world, """mutation($input: AddPullRequestReviewInput!) {
        addPullRequestReview(input: $input) { pullRequestReview { id } } }""", {"input": {
        "pullRequestId": node, "event": "COMMENT", "body": "x",
        "comments": [{"path": "feature.txt", "position": 1, "body": "here"}]}}, headers=GRACE)
    assert on_lines["errors"][0] == {
        "type": "MOCKINGBIRD_UNSUPPORTED", "path": ["addPullRequestReview"],
        "locations": [{"line": 2, "column": 9}],
        "message": "Mockingbird does not model review comments on lines"}
    teams = ql(world, """mutation($input: RequestReviewsInput!) { requestReviews(input: $input) {
        clientMutationId } }""", {"input": {"pullRequestId": node, "teamIds": ["T_1"],
                                            "union": True}})
    assert teams["errors"][0]["type"] == "MOCKINGBIRD_UNSUPPORTED"
    assert world.get("/repos/octo/demo/issues/1/comments").json == []
    assert world.get("/repos/octo/demo/pulls/1/reviews").json == []


UPDATE = """mutation($input: UpdatePullRequestInput!) { updatePullRequest(input: $input) {
  pullRequest { title labels(first: 5) { nodes { name } } assignees(first: 5) { nodes { login } }
  } } }"""
REQUEST = """mutation($input: RequestReviewsInput!) { requestReviews(input: $input) {
  pullRequest { reviewRequests(first: 5) { nodes { requestedReviewer {
    ... on User { login } } } } } } }"""


def test_update_replaces_labels_and_assignees_and_review_requests_add_or_replace(world):
    node = create(world)["data"]["createPullRequest"]["pullRequest"]["id"]
    grace, (bug, docs) = node_ids(world, "bug", "docs")
    ql(world, UPDATE, {"input": {"pullRequestId": node, "labelIds": [bug]}})
    done = ql(world, UPDATE, {"input": {"pullRequestId": node, "title": "Renamed",
                                        "labelIds": [docs], "assigneeIds": [grace]}})
    assert done["data"]["updatePullRequest"]["pullRequest"] == {
        "title": "Renamed", "labels": {"nodes": [{"name": "docs"}]},
        "assignees": {"nodes": [{"login": "grace"}]}}
    rest = world.get("/repos/octo/demo/pulls/1").json
    assert ([lab["name"] for lab in rest["labels"]], rest["assignees"][0]["login"]) == (
        ["docs"], "grace")
    asked = ql(world, REQUEST, {"input": {"pullRequestId": node, "userIds": [grace],
                                          "union": True}})
    requested = asked["data"]["requestReviews"]["pullRequest"]["reviewRequests"]["nodes"]
    assert requested == [{"requestedReviewer": {"login": "grace"}}]
    replaced = ql(world, REQUEST, {"input": {"pullRequestId": node, "userIds": []}})
    assert replaced["data"]["requestReviews"]["pullRequest"]["reviewRequests"]["nodes"] == []
    assert world.get("/repos/octo/demo/pulls/1/requested_reviewers").json["users"] == []


def test_a_pending_review_is_submitted_by_its_node_id(world):
    node = create(world)["data"]["createPullRequest"]["pullRequest"]["id"]
    pending = ql(world, """mutation($input: AddPullRequestReviewInput!) {
        addPullRequestReview(input: $input) { pullRequestReview { id state } } }""",
                 {"input": {"pullRequestId": node, "body": "Looks right."}}, headers=GRACE)
    review = pending["data"]["addPullRequestReview"]["pullRequestReview"]
    assert review["state"] == "PENDING"
    submitted = ql(world, """mutation($input: SubmitPullRequestReviewInput!) {
        submitPullRequestReview(input: $input) { pullRequestReview { id state } } }""",
                   {"input": {"pullRequestReviewId": review["id"], "event": "APPROVE"}},
                   headers=GRACE)
    assert submitted["data"]["submitPullRequestReview"]["pullRequestReview"] == {
        "id": review["id"], "state": "APPROVED"}
    assert world.get("/repos/octo/demo/pulls/1/reviews").json[0]["state"] == "APPROVED"
