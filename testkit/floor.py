"""A virtualenv that holds the lowest version of one dependency that setup.cfg declares, beside
the project's other dependencies: the floor tests run the project on it."""
import configparser
import re
import subprocess
import sys
import sysconfig

from packaging.version import Version

from .servers import REPO


def declared_floor(package):
    """The version in setup.cfg's `package>=X` requirement."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    found = re.findall(rf"^{re.escape(package)}>=([\d.]+)$",
                       config["options"]["install_requires"], re.M)
    assert len(found) == 1, f"setup.cfg must declare {package}>=X exactly once"
    return found[0]


def floor_venv(folder, package, module=None):
    """A venv in `folder` whose own site-packages holds only the lowest declared `package`
    (installed from the package index); the project's other dependencies come from the running
    interpreter's, after it. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    site = site.stdout.strip()
    (folder / site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    version = declared_floor(package)
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--target", site, f"{package}=={version}"],
        capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, f"could not install {package} {version}:\n{installed.stderr}"
    found = subprocess.run([python, "-c", f"import {module or package} as m; print(m.__version__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Version(found) == Version(version)
    return python
