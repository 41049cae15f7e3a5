"""freezegun for one test at a time: `freezegun.configure` changes a process-wide list, and
each pytest-xdist worker imports every test file, so a module-level configure reached the
tests of every other file (PyGithub then signed its App JWT on the real clock while the
emulator's clock was frozen)."""
import contextlib

import freezegun

# Client libraries loaded by other tests and called by no chat test: freezegun's first freeze
# looks through every loaded module for the clock's functions, and these are the bulk of them.
CLIENT_LIBRARIES = ("openai", "github", "playwright", "hypothesis", "pydantic", "cryptography",
                    "nacl", "httpx", "httpcore", "jsonschema", "referencing")


@contextlib.contextmanager
def frozen(when, *, ignore=CLIENT_LIBRARIES, unignore=()):
    """Freeze time at `when` with `ignore` added to freezegun's defaults and `unignore` taken
    out of them, for this block only; yield freezegun's handle (`tick`, `move_to`)."""
    settings = freezegun.config.settings
    defaults = settings.default_ignore_list
    settings.default_ignore_list = [name for name in defaults if name not in unignore]
    try:
        with freezegun.freeze_time(when, ignore=list(ignore)) as handle:
            yield handle
    finally:
        settings.default_ignore_list = defaults
