"""`pip install` of the newest gunicorn and dulwich on the package index, beside setup.cfg's
bounds on them: either that release is within the bounds (pip installs it, and
test_<package>_bounds.py runs the project on it as the newest allowed) or pip refuses it. One
of the two tests per package says which, the other skips saying why."""
import pytest

from testkit.bounds import declared, newest_release, resolve

pytestmark = pytest.mark.timeout(240)
BOUNDED = ("gunicorn", "dulwich")


@pytest.mark.parametrize("package", BOUNDED)
def test_the_newest_release_within_the_bounds_is_what_pip_installs(package):
    newest, requirement = newest_release(package), declared(package)
    if newest not in requirement.specifier:
        pytest.skip(f"{package} {newest}, the newest on the index, is beyond setup.cfg's "
                    f"{requirement}: pip refuses it")
    chosen, refusal = resolve(str(requirement))
    assert refusal is None and chosen[package] == newest, (chosen, refusal)


@pytest.mark.parametrize("package", BOUNDED)
def test_the_newest_release_beyond_the_bounds_is_refused_by_pip(package):
    newest, requirement = newest_release(package), declared(package)
    if newest in requirement.specifier:
        pytest.skip(f"{package} {newest}, the newest on the index, is within setup.cfg's "
                    f"{requirement}: pip installs it, test_{package}_bounds.py runs on it")
    chosen, refusal = resolve(f"{package}=={newest}", str(requirement))
    assert chosen is None and "ResolutionImpossible" in refusal, (chosen, refusal)
