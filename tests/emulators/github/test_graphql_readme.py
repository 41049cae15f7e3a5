"""The GraphQL README's shell block runs as written: gunicorn on a unix socket beside a TCP
port, and the real `gh` configured to use the socket."""
import os
import shutil

import pytest

from testkit.servers import unused_port
from testkit.shell import run_as_user, sh_blocks, user_env

pytestmark = pytest.mark.gunicorn


def test_the_shell_block_serves_gh_over_a_unix_socket(tmp_path):
    if shutil.which("gh") is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):  # `make test` installs it
            pytest.fail("CI must run the gh tests: gh is not installed", pytrace=False)
        pytest.skip("gh is not installed (as root, `make test` installs Debian's package)")
    if shutil.which("curl") is None:
        pytest.skip("curl is not on this machine")
    script = "\n".join(sh_blocks("emulators/github/graphql/README.md"))
    done = run_as_user(script, user_env(TMPDIR="/tmp"), {8828: unused_port()})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('{"data": {"viewer": {"login": "user-')
    assert lines[1:3] == ["name:\tocto/demo", "description:\t"] and "# demo" in lines
