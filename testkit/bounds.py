"""The versions setup.cfg allows of one dependency, from the package index: a virtualenv that
holds the lowest or the newest of them beside the project's other dependencies (the bounds
tests run the project on it), and what `pip install` makes of the newest release there is."""
import configparser
import os
import json
import subprocess
import sys
import sysconfig

from packaging.requirements import Requirement
from packaging.version import Version

from .servers import REPO

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def declared(package):
    """setup.cfg's requirement on `package` (its `install_requires` line)."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    found = [Requirement(line) for line in config["options"]["install_requires"].split("\n")
             if line.strip() and Requirement(line).name == package]
    assert len(found) == 1, f"setup.cfg must declare {package} exactly once"
    return found[0]


def lowest(package):
    """The version of setup.cfg's `package>=X` bound."""
    floors = [spec.version for spec in declared(package).specifier if spec.operator == ">="]
    assert len(floors) == 1, f"setup.cfg must declare {package}>=X"
    return floors[0]


def bound_venv(folder, package, end):
    """A venv in `folder` whose own site-packages holds only `package` at one end of what
    setup.cfg allows (`end`: "lowest" or "newest", installed from the package index); the
    project's other dependencies come from the running interpreter's, after it. Returns its
    python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    site = site.stdout.strip()
    (folder / site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wanted = f"{package}=={lowest(package)}" if end == "lowest" else str(declared(package))
    installed = subprocess.run([*PIP, "install", "--quiet", "--no-deps", "--target", site,
                                wanted], capture_output=True, text=True, timeout=180)
    assert installed.returncode == 0, f"could not install {wanted}:\n{installed.stderr}"
    found = subprocess.run([python, "-c", "import importlib.metadata as m; "
                            f"print(m.version({package!r}))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if end == "lowest":
        assert Version(found) == Version(lowest(package)), found
    else:
        assert Version(found) in declared(package).specifier, found
    return python


def resolve(*requirements):
    """What `pip install` would install for `requirements` (from the index, whatever is
    installed here): ({package: version}, None), or (None, pip's refusal)."""
    done = subprocess.run([*PIP, "install", "--dry-run", "--ignore-installed", "--no-deps",
                           "--quiet", "--report", "-", *requirements],
                          capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        return None, done.stderr
    report = json.loads(done.stdout)
    return {item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in report["install"]}, None


def newest_release(package):
    """The newest release of `package` on the package index."""
    chosen, refusal = resolve(package)
    assert chosen is not None, refusal
    return chosen[package]


def run_tests(python, *paths):
    """Run the test files `paths` with `python` (a bound venv's) in a pytest of its own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
