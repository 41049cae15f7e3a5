"""Check runs and check suites, as GitHub makes them, and their `check_run`/`check_suite` events.

A check run is the work of a GitHub App: the App whose installation token created it, else
the emulator's own `mockingbird-ci` (so any token may create runs). It belongs to that App's
suite of its head commit (made with the App's first run of that commit, as GitHub does when an
app creates a run); a `conclusion` forces `status: completed`. The suite's status and
conclusion follow its latest run of each name, so a run re-made after a rerequest replaces the
one that failed.
"""

from .. import errors, ids, shapes
from ..inputs import UNCHANGED
from ..shapes import apps as app_shapes
from ..store import CHECK_RUNS, CHECK_SUITES, AppStore
from .rule import Rule

STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CONCLUSIONS = ("action_required", "cancelled", "timed_out", "failure", "neutral", "success",
               "skipped", "stale")  # a suite takes the first of its runs' in this order
PASSING = ("success", "neutral", "skipped")
RUN_FIELDS = ("name", "details_url", "external_id", "started_at", "completed_at", "status",
              "conclusion", "output")


class CheckRules(Rule):
    """Create, update and read check runs and suites; `rules` reaches commits (what a sha
    names, a suite's head commit)."""

    def create(self, repo, *, name, head_sha, details_url=UNCHANGED, external_id=UNCHANGED,
               started_at=UNCHANGED, completed_at=UNCHANGED, status=UNCHANGED,
               conclusion=UNCHANGED, output=UNCHANGED, app=None):
        """`checks/create`: a run on the commit `head_sha` (a full sha; 422 when none), with
        what the other fields set (`output`: `{title, summary, text}`), by the App whose slug
        `app` is (None: `mockingbird-ci`)."""
        given = _given(locals())
        key = repo["key"]
        with self.store.transaction():
            sha = self.head_commit(repo, head_sha)
            now = self.clock.now()
            suite = self._suite_for(repo, sha, now, app)
            number = self.store.next_id("check_run_ids")
            run = {"repo": key, "id": number, "node_id": ids.node_id("github", "CR_", number),
                   "head_sha": sha, "name": name, "suite": suite["id"], "app": app,
                   "status": "queued", "conclusion": None, "started_at": now,
                   "completed_at": None, "external_id": "", "details_url": None,
                   "output": {"title": None, "summary": None, "text": None}}
            _apply(run, given, now)
            self.store.put_item(CHECK_RUNS, f"{key}:{number}", run)
            self.emit("check_run", lambda: self._check_run_event("created", repo, run))
            self._refresh_suite(repo, suite["id"])
        return self.check_run_json(repo, run)

    def head_commit(self, repo, head_sha):
        """The commit a run's `head_sha` names (a full sha only); 422 when none."""
        sha = self.rules.commits.commit_sha(repo["key"], head_sha, exact=True)
        if sha is None:
            raise errors.Unprocessable(f"No commit found for SHA: {head_sha}")
        return sha

    def update(self, repo, run_id, *, lost=False, name=UNCHANGED, details_url=UNCHANGED,
               external_id=UNCHANGED, started_at=UNCHANGED, completed_at=UNCHANGED,
               status=UNCHANGED, conclusion=UNCHANGED, output=UNCHANGED):
        """`checks/update`: set the fields given; `lost` computes the answer the update gets
        and stores nothing (the lost-update fault)."""
        given = _given(locals())
        key = repo["key"]
        with self.store.transaction():
            run = self.run(repo, run_id)
            was_completed = run["status"] == "completed"
            run = {**run, "output": dict(run["output"])}
            _apply(run, given, self.clock.now())
            if lost:
                return self.check_run_json(repo, run)
            self.store.put_item(CHECK_RUNS, f"{key}:{run['id']}", run)
            if run["status"] == "completed" and not was_completed:
                self.emit("check_run", lambda: self._check_run_event("completed", repo, run))
            self._refresh_suite(repo, run["suite"])
        return self.check_run_json(repo, run)

    def get(self, repo, run_id):
        """`checks/get`."""
        return self.check_run_json(repo, self.run(repo, run_id))

    def rerequest(self, repo, run_id):
        """`checks/rerequest-run`: ask the app to run the check again: the suite goes back to
        `queued` (the run itself stays as it is until the app updates it or makes a new one of
        the same name)."""
        key = repo["key"]
        with self.store.transaction():
            run = self.run(repo, run_id)
            suite = self.store.item(CHECK_SUITES, f"{key}:{run['suite']}")
            suite = {**suite, "status": "queued", "conclusion": None, "rerequested": True,
                     "updated_at": self.clock.now()}
            self.store.put_item(CHECK_SUITES, f"{key}:{suite['id']}", suite)
            self.emit("check_run", lambda: self._check_run_event("rerequested", repo, run))
        return {}

    def runs_for(self, repo, sha, page, *, latest=True, name=None, status=None):
        """`checks/list-for-ref`: the runs on a commit, the latest per name unless not
        `latest`, narrowed to a `name` and a `status`; `{total_count, check_runs}`."""
        runs = self.store.items(CHECK_RUNS, {"repo": repo["key"], "head_sha": sha},
                                order_by="id", desc=True)
        return self._run_page(repo, runs, page, latest, name, status)

    def runs_of_suite(self, repo, suite_id, page, *, latest=True, name=None, status=None):
        """`checks/list-for-suite`, narrowed as `runs_for` is."""
        suite = self.suite(repo, suite_id)
        runs = self.store.items(CHECK_RUNS, {"repo": repo["key"], "suite": suite["id"]},
                                order_by="id", desc=True)
        return self._run_page(repo, runs, page, latest, name, status)

    def _run_page(self, repo, runs, page, latest, name, status):
        if latest:
            runs = latest_per_name(runs)
        if name is not None:
            runs = [r for r in runs if r["name"] == name]
        if status is not None:
            runs = [r for r in runs if r["status"] == status]
        return {"total_count": len(runs),
                "check_runs": [self.check_run_json(repo, r) for r in page.of(runs)]}

    def suites_for(self, repo, sha, page):
        """`checks/list-suites-for-ref`: `{total_count, check_suites}`."""
        suites = self.store.items(CHECK_SUITES, {"repo": repo["key"], "head_sha": sha},
                                  order_by="id")
        return {"total_count": len(suites),
                "check_suites": [self.check_suite_json(repo, s) for s in page.of(suites)]}

    def get_suite(self, repo, suite_id):
        """`checks/get-suite`."""
        return self.check_suite_json(repo, self.suite(repo, suite_id))

    def latest(self, key, sha):
        """The latest run of each name on a commit (what protection and mergeability read)."""
        return latest_per_name(self.store.items(CHECK_RUNS, {"repo": key, "head_sha": sha},
                                                order_by="id", desc=True))

    # records -------------------------------------------------------------------------------

    def run(self, repo, run_id):
        """The check run record `run_id`; 404 when there is none."""
        return self._record(CHECK_RUNS, repo, run_id)

    def suite(self, repo, suite_id):
        """The check suite record `suite_id`; 404 when there is none."""
        return self._record(CHECK_SUITES, repo, suite_id)

    def _suite_for(self, repo, sha, now, app):
        """The App's suite for a head commit, made with its first run (one per App)."""
        key = repo["key"]
        for found in self.store.items(CHECK_SUITES, {"repo": key, "head_sha": sha}):
            if found.get("app") == app:
                return found
        number = self.store.next_id("check_suite_ids")
        branches = sorted(ref["ref"][len("refs/heads/"):] for ref in self.store.refs(key)
                          if ref["kind"] == "heads" and ref["sha"] == sha)
        suite = {"repo": key, "id": number, "node_id": ids.node_id("github", "CS_", number),
                 "head_sha": sha, "head_branch": branches[0] if branches else None, "app": app,
                 "status": "queued", "conclusion": None, "created_at": now, "updated_at": now}
        self.store.put_item(CHECK_SUITES, f"{key}:{number}", suite)
        return suite

    def _refresh_suite(self, repo, suite_id):
        """Derive the suite's status and conclusion from its latest run of each name; send
        `check_suite` `completed` when it completes."""
        key = repo["key"]
        suite = self.store.item(CHECK_SUITES, f"{key}:{suite_id}")
        runs = latest_per_name(self.store.items(CHECK_RUNS, {"repo": key, "suite": suite_id},
                                                order_by="id", desc=True))
        if all(r["status"] == "completed" for r in runs):
            status = "completed"
            found = {r["conclusion"] for r in runs}
            conclusion = next((c for c in CONCLUSIONS if c in found), "neutral")
        else:
            status = "in_progress" if any(r["status"] == "in_progress" for r in runs) \
                else "queued"
            conclusion = None
        if (status, conclusion) == (suite["status"], suite["conclusion"]):
            return
        suite = {**suite, "status": status, "conclusion": conclusion,
                 "updated_at": self.clock.now()}
        suite.pop("rerequested", None)
        self.store.put_item(CHECK_SUITES, f"{key}:{suite_id}", suite)
        if status == "completed":
            self.emit("check_suite", lambda: {
                "action": "completed", "check_suite": self.check_suite_json(repo, suite,
                                                                            event=True),
                "repository": self.repos.json(repo), "sender": self.accounts.sender()})

    # shapes --------------------------------------------------------------------------------

    def app_json(self, repo, slug=None):
        """The GitHub App of a run or suite (`integration`): the App `slug` names, else the
        emulator's own, owned by the repository's owner."""
        found = AppStore(self.store.records).app(slug) if slug else None
        if found is None:
            return shapes.app(self.repos.base_url, self.accounts.json(repo["owner"]))
        installations = AppStore(self.store.records).installations(app_id=found["id"])
        return app_shapes.app(self.repos.base_url, found, self.accounts.json(found["owner"]),
                              len(installations))

    def _minimal_pulls(self, repo, sha):
        """The open PRs whose head is at `sha` (`pull-request-minimal`): those of the branches
        whose tip it is, so a repository of many PRs is not scanned."""
        key, out = repo["key"], []
        repo_min = {"id": repo["id"], "url": self.repos.url(repo), "name": repo["name"]}
        branches = sorted(ref["ref"][len("refs/heads/"):] for ref in self.store.refs(key)
                          if ref["kind"] == "heads" and ref["sha"] == sha)
        pulls = [pull for branch in branches for pull in self.store.pulls(
            {"repo": key, "state": "open", "head_ref": branch}, order_by=None, desc=False,
            limit=None, offset=0)]
        for pull in sorted(pulls, key=lambda p: p["number"]):
            tips = self.repos.tips(key, (pull["base_ref"],))
            out.append({"id": pull["id"], "number": pull["number"],
                        "url": f"{self.repos.url(repo)}/pulls/{pull['number']}",
                        "head": {"ref": pull["head_ref"], "sha": sha, "repo": repo_min},
                        "base": {"ref": pull["base_ref"],
                                 "sha": tips.get(pull["base_ref"], pull["base_sha"]),
                                 "repo": repo_min}})
        return out

    def check_run_json(self, repo, run):
        """A run record as GitHub shows it (`check-run`)."""
        return shapes.check_run(*self.repos.urls(repo), run,
                                app=self.app_json(repo, run.get("app")),
                                pulls=self._minimal_pulls(repo, run["head_sha"]))

    def check_suite_json(self, repo, suite, *, event=False):
        """A suite record as GitHub shows it (`check-suite`; a webhook's leaves out the
        repository)."""
        runs = latest_per_name(self.store.items(CHECK_RUNS, {"repo": repo["key"],
                                                             "suite": suite["id"]},
                                                order_by="id", desc=True))
        return shapes.check_suite(
            self.repos.url(repo), suite, app=self.app_json(repo, suite.get("app")),
            pulls=self._minimal_pulls(repo, suite["head_sha"]), runs=runs,
            commit=self.rules.commits.json(repo, suite["head_sha"])["commit"],
            repository=None if event else self.repos.json(repo))

    def _check_run_event(self, action, repo, run):
        suite = self.store.item(CHECK_SUITES, f"{repo['key']}:{run['suite']}")
        check_run = {**self.check_run_json(repo, run),
                     "check_suite": self.check_suite_json(repo, suite, event=True)}
        return {"action": action, "check_run": check_run, "repository": self.repos.json(repo),
                "sender": self.accounts.sender()}


def latest_per_name(runs_newest_first):
    """Keep the newest run of each name (GitHub's `filter=latest`), newest first."""
    seen, out = set(), []
    for run in runs_newest_first:
        if run["name"] not in seen:
            seen.add(run["name"])
            out.append(run)
    return out


def _given(arguments):
    """The run fields a create or an update sets."""
    return {field: arguments[field] for field in RUN_FIELDS
            if arguments.get(field, UNCHANGED) is not UNCHANGED}


def _apply(run, given, now):
    """Apply what a create or an update sets to a run record (the schema checked it); a
    `conclusion` forces `completed`."""
    for field in ("name", "details_url", "external_id", "started_at", "completed_at"):
        if field in given:
            run[field] = given[field]
    if "status" in given:
        run["status"] = given["status"]
    if "conclusion" in given:
        run["conclusion"] = given["conclusion"]
        run["status"] = "completed"  # GitHub: providing a conclusion completes the run
    if "output" in given:
        run["output"].update({f: given["output"].get(f, run["output"].get(f))
                              for f in ("title", "summary", "text")})
    if run["status"] == "completed":
        if run["conclusion"] is None:
            raise errors.ValidationFailed(
                resource="CheckRun", field="conclusion",
                custom="conclusion is required when status is completed")
        run["completed_at"] = run["completed_at"] or now
    elif "status" in given:  # back to queued or in progress: no longer concluded
        run["conclusion"], run["completed_at"] = None, None
