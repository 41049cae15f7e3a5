"""The lowest and the newest dulwich that setup.cfg allows carry the GitHub emulator's git:
each installed from the package index into a venv of its own (beside the project's other
dependencies), the stock git command line clones, fetches (shallow, partial) and pushes through
it, merges make their commits, and the private names we use of it
(tests/test_dependency_pins.py) still mean what the code expects."""
import pytest

from testkit.bounds import bound_venv, run_tests

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", params=["lowest", "newest"])
def bound_python(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"dulwich-{request.param}")
    return bound_venv(folder, "dulwich", request.param)


def test_git_over_the_emulator_and_the_private_names_it_uses_hold_on_the_bounds(bound_python):
    run_tests(bound_python, "tests/test_dependency_pins.py",
              "tests/emulators/github/test_git_transport.py",
              "tests/emulators/github/test_objects.py", "tests/emulators/github/test_merges.py")
