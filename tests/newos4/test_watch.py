"""The watcher's decisions (when a pass runs, what it says) over a scripted Hermes; the
process itself (signals, latency, cron beside it) is tests/integration/relay/test_watch.py."""
import pytest

from spaces.newos4.relay.hermes_client import HermesUnreachable

from spaces.newos4.relay.watch import RACY_NS, Watcher

from .conftest import ChatClient
from .test_relay import ScriptedHermes


class Ticks:
    """A monotonic clock the test moves, and a wall clock far ahead of any file mtime."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    @staticmethod
    def wall_ns():
        return 2**62


@pytest.fixture
def ticks():
    return Ticks()


@pytest.fixture
def watcher(service, ticks):
    hermes = ScriptedHermes()
    lines = []
    watcher = Watcher(service, hermes, log=lambda line, problem: lines.append(line),
                      monotonic=ticks.monotonic, wall_ns=ticks.wall_ns)
    watcher.hermes, watcher.lines = hermes, lines
    return watcher


def settle(watcher):
    """Tick until a tick runs no pass (a pass's own writes show on the next tick, once)."""
    for _ in range(3):
        if not watcher.step():
            return
    raise AssertionError("the watcher keeps running passes with nothing changing")


def test_a_new_question_is_submitted_on_the_next_tick(client, watcher):
    assert watcher.step()  # the first tick always looks
    settle(watcher)
    assert not watcher.step()  # nothing changed, nothing due: a stat, no pass
    client.say("hello?")
    assert watcher.step()
    assert [body["input"] for body, _ in watcher.hermes.submits] == ["hello?"]


def test_runs_in_flight_are_polled_every_poll_interval(client, watcher, ticks):
    client.say("q")
    watcher.step()
    settle(watcher)
    watcher.hermes.runs["run_1"].update(status="completed", output="a")
    ticks.now += watcher.poll_s / 2
    assert not watcher.step()
    ticks.now += watcher.poll_s / 2
    assert watcher.step()
    assert any("run=run_1 delivered" in line for line in watcher.lines)


def test_idle_it_only_stats_until_the_idle_pass(client, watcher, ticks):
    settle(watcher)
    ticks.now += 29
    assert not watcher.step()
    ticks.now += 2
    assert watcher.step()


def test_a_folder_changed_within_the_racy_window_is_looked_at_again(client, watcher, ticks):
    client.say("q")
    newest = watcher._snapshot()[0][1]
    watcher.wall_ns = lambda: newest + RACY_NS // 2
    assert watcher.step()
    watcher.step()
    assert watcher.step()  # still racy: another pass, though nothing changed since
    watcher.wall_ns = ticks.wall_ns
    settle(watcher)


@pytest.mark.parametrize("fault", [HermesUnreachable("refused"), OSError("disk trouble")])
def test_a_lasting_problem_is_said_once_and_backs_off(service, ticks, fault):
    hermes = ScriptedHermes()

    def get_run(run_id):
        raise fault
    hermes.get_run = get_run
    problems = []
    watcher = Watcher(service, hermes, log=lambda line, problem: problems.append(problem),
                      monotonic=ticks.monotonic, wall_ns=ticks.wall_ns)
    service.post("0123456789abcdef", "q", "operator", "192.0.2.1")
    watcher.step()
    assert problems == [False]  # submitted
    for _ in range(4):
        ticks.now += 60
        assert watcher.step()
    assert problems == [False, True]  # said once, not once per pass
    ticks.now += 0.1
    assert not watcher.step()  # backed off


def test_a_second_watcher_refuses_to_start(service, watcher):
    import threading
    stop = threading.Event()
    first = threading.Thread(target=watcher.watch, args=(stop,))
    first.start()
    try:
        while watcher.passes == 0:
            stop.wait(0.01)
        from spaces.newos4.relay.watch import WatcherBusy
        with pytest.raises(WatcherBusy):
            Watcher(service, ScriptedHermes(), log=lambda *a: None).watch(threading.Event())
    finally:
        stop.set()
        first.join(5)
    assert not first.is_alive()


def test_a_new_browser_message_while_in_flight_supersedes_on_the_next_tick(make_app, ticks):
    testapp, service = make_app()
    client = ChatClient(testapp)
    hermes = ScriptedHermes()
    watcher = Watcher(service, hermes, log=lambda *a: None, monotonic=ticks.monotonic,
                      wall_ns=ticks.wall_ns)
    client.say("first")
    watcher.step()
    client.say("second")
    watcher.step()
    assert hermes.stops == ["run_1"] and len(hermes.submits) == 2


def test_a_corrupt_thread_is_said_once_and_the_others_still_flow(client, service, ticks):
    """The relay's per-thread isolation, inherited: the watcher runs the same pass."""
    service.settings.chat_dir.mkdir(parents=True, exist_ok=True)
    (service.settings.chat_dir / "00000000000000aa.json").write_text("{not json")
    hermes, lines = ScriptedHermes(), []
    watcher = Watcher(service, hermes, log=lambda line, problem: lines.append(line),
                      monotonic=ticks.monotonic, wall_ns=ticks.wall_ns)
    for n in range(3):
        client.say(f"q{n}")
        watcher.step()
        hermes.runs[f"run_{n + 1}"].update(status="completed", output=f"a{n}")
        ticks.now += watcher.poll_s
        watcher.step()
    assert [m["text"] for m in service.history(client.thread)] == [
        "q0", "a0", "q1", "a1", "q2", "a2"]
    assert sum("00000000000000aa" in line for line in lines) == 1
