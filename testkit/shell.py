"""Run a README's shell blocks as a user would on a fresh clone: one bash from the checkout,
with no virtualenv activated (a bare `python` there has none of the dependencies)."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

from .servers import REPO

VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))


def readmes():
    """Every README of the checkout (tracked or new, not ignored), as paths from the root."""
    found = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                            "*README.md"], cwd=REPO, capture_output=True, text=True, check=True)
    return sorted(found.stdout.split())


def sh_blocks(readme_path, section=None):
    """Every ```sh block of the README (a path from the repository root), in order; with
    `section` (a heading line, "## Using the emulators") only those under that heading, up to
    the next heading of its level or above."""
    readme = (REPO / readme_path).read_text()
    if section is not None:
        readme = _section(readme, section)
    return re.findall(r"```sh\n(.*?)```", readme, re.S)


def _section(text, heading):
    """The lines from `heading` to the next heading of its level or above (code blocks, whose
    `# comments` look like headings, are skipped)."""
    level = len(heading.split(" ")[0])
    lines, inside, fenced = [], False, False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.rstrip("\n") == heading:
            inside = True
        elif not fenced and inside and re.match(rf"#{{1,{level}}} ", line):
            break
        if inside:
            lines.append(line)
    assert inside, f"no heading {heading!r}"
    return "".join(lines)


def user_env(**extra):
    """The environment of a user's shell: no virtualenv on PATH or in the variables, none of
    the test suite's own settings (tests/conftest.py opens the relay)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NEWOS4_RELAY_ACCESS")
           and not k.startswith("PYTEST")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if os.path.abspath(p) != VENV_BIN and ".venv" not in p)
    return {**env, **extra}


def run_as_user(script, env, ports=(), timeout=120):
    """`bash -euo pipefail` over `script` from the checkout, each port number in `ports`
    ({written: free}) replaced, so a test never takes a port a user's server may hold. It runs
    in its own process group, ended afterwards: a block that failed half-way may have left a
    server running."""
    script = _on_ports(script, ports)
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _on_ports(script, ports):
    """`script` with each port number in `ports` ({written: free}) replaced."""
    for written, free in dict(ports).items():
        script = re.sub(rf"\b{written}\b", str(free), script)
    return script


class Terminal:
    """One bash from the checkout that a test types blocks into, one at a time, as a person
    types what a README says, filling in what the README leaves to them (`<CODE>`: the code the
    page shows) only when they would have it. What bash and its background jobs print, standard
    error included, collects in `screen`, as a terminal shows it. `bash -eu`: a failed line ends
    the terminal, which `close()` reports."""

    def __init__(self, env, ports=()):
        self.ports = dict(ports)
        self.proc = subprocess.Popen(["bash", "-eu"], cwd=REPO, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.screen = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.screen += line

    def type(self, block, **fill):
        """Type `block`, each `<NAME>` in it replaced by `fill[NAME]`, each port replaced."""
        for name, value in fill.items():
            block = block.replace(f"<{name}>", value)
        block = _on_ports(block, self.ports)
        self.proc.stdin.write(block if block.endswith("\n") else block + "\n")
        self.proc.stdin.flush()

    def wait_for(self, pattern, timeout=20):
        """The first match of `pattern` on the screen, once it shows (AssertionError if not)."""
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern, self.screen)):
            assert self.proc.poll() is None, f"the terminal ended:\n{self.screen}"
            assert time.monotonic() < deadline, f"no {pattern!r} on the screen:\n{self.screen}"
            time.sleep(0.05)
        return found

    def close(self, timeout=20):
        """End the input, wait for bash to exit; its exit status. Its process group is ended."""
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.proc.wait()
