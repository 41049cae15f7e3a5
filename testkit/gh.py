"""The real `gh` command line against the GitHub emulator over a unix socket.

gh treats any host but github.com as GitHub Enterprise Server (REST under `/api/v3/`, GraphQL at
`/api/graphql`, `Authorization: token <GH_ENTERPRISE_TOKEN>`); `http_unix_socket` in its config
sends those requests as plain HTTP over the socket, `Host:` the host name. Each `Gh` has a fresh
config folder and a fresh TMPDIR: gh 2.23 keeps introspection answers for 24 h in
`$TMPDIR/gh-cli-cache`, keyed with the token, and one test's answers must not leak into another.
"""
import os
import shutil
import subprocess

HOST = "github.local"


def gh_path():
    """The `gh` on PATH, or None."""
    return shutil.which("gh")


def gh_version():
    """The installed gh's version, `(2, 23, 0)`."""
    out = subprocess.run([gh_path(), "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    return tuple(int(part) for part in out.split()[2].split("+")[0].split(".")[:3])


class Gh:
    """Run gh as a person does, with the token `token`, in the repository `repo` (`o/r`)."""

    def __init__(self, socket_path, folder, token, repo, *, host=HOST):
        self.folder = folder
        config, tmp = folder / "gh-config", folder / "gh-tmp"
        config.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(exist_ok=True)
        (config / "config.yml").write_text(f"http_unix_socket: {socket_path}\nprompt: disabled\n")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
            "GH_CONFIG_DIR": str(config), "TMPDIR": str(tmp), "GH_HOST": host,
            "GH_ENTERPRISE_TOKEN": token, "GH_REPO": f"{host}/{repo}",
            "GH_PROMPT_DISABLED": "1", "GH_NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1",
            "GH_PAGER": "cat", "PAGER": "cat", "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        }

    def run(self, *args, ok=True, cwd=None, stdin=None):
        """Run `gh ARGS`; `ok` asserts exit 0 (with its output when not). Returns the
        CompletedProcess (text)."""
        done = subprocess.run([gh_path(), *args], env=self.env, cwd=cwd or self.folder,
                              input=stdin, capture_output=True, text=True, timeout=60)
        assert not ok or done.returncode == 0, \
            f"gh {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done
