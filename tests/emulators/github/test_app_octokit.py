"""A GitHub App bot under Node: @octokit/auth-app and @octokit/rest, unmodified, against the
served emulator's `/api/v3` (app_bot_flow.mjs says what it does); installed from npm into
`var/octokit/` with @octokit/rest (test_octokit.py's fixture)."""
import subprocess

from emulators.github import serve

from .test_octokit import octokit_folder  # noqa: F401  (the npm install, shared)


def test_an_app_bot_receives_a_signed_webhook_and_comments_as_itself(octokit_folder):  # noqa: F811
    with serve() as server:
        done = subprocess.run(["node", "app_bot_flow.mjs", server.url + "/api/v3",
                               server.admin_url], cwd=octokit_folder, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "app bot flow ok" in done.stdout
