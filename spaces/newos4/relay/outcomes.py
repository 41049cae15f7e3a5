"""What a step of a relay pass asks the pass to do. The approval and lost-submission steps
decide; the pass (passes.py) acts on their answer, so each step reads and tests on its own."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Deliver:
    """Write the run's output (`run`, a run object) into the thread as Hermes' answer."""
    run: dict
    run_id: str = None  # how the log names the run, when not the record's own


@dataclasses.dataclass(frozen=True)
class Drop:
    """Stop the run (best effort, with `stop`) and forget the thread's relay record."""
    why: str
    stop: bool = True


@dataclasses.dataclass(frozen=True)
class Tell:
    """Answer the question with one `hermes` message, `text`, then forget the record."""
    text: str
    why: str


@dataclasses.dataclass(frozen=True)
class Unreachable:
    """Hermes gave no answer: the pass stops contacting it."""
    why: str


@dataclasses.dataclass(frozen=True)
class Resubmit:
    """Submit the question (again): it cannot have started a run."""
    why: str
