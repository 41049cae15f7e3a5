"""HermesSettings.from_env: defaults, and a bad duration named in the error."""
import pytest

from emulators.hermes.settings import HermesSettings


def test_defaults_when_unset_or_empty():
    settings = HermesSettings.from_env({"HERMES_SSE_KEEPALIVE_SECONDS": ""})
    assert (settings.keepalive_s, settings.events_wait_s, settings.poll_s) == (30.0, 1.0, 0.05)


def test_durations_are_read():
    settings = HermesSettings.from_env({"HERMES_SSE_KEEPALIVE_SECONDS": "0.5",
                                        "HERMES_EVENTS_WAIT_SECONDS": "0",
                                        "HERMES_SSE_POLL_SECONDS": "0.02"})
    assert (settings.keepalive_s, settings.events_wait_s, settings.poll_s) == (0.5, 0.0, 0.02)


@pytest.mark.parametrize("name, raw", [("HERMES_SSE_KEEPALIVE_SECONDS", "abc"),
                                       ("HERMES_SSE_KEEPALIVE_SECONDS", "0"),
                                       ("HERMES_SSE_POLL_SECONDS", "-1"),
                                       ("HERMES_SSE_POLL_SECONDS", "nan"),
                                       ("HERMES_EVENTS_WAIT_SECONDS", "inf")])
def test_a_bad_duration_names_its_variable(name, raw):
    with pytest.raises(ValueError, match=f"^{name}: expected a number of seconds"):
        HermesSettings.from_env({name: raw})
