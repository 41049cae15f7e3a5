"""Run the benchmarks (bench/<name>.py, each also `python -m bench.<name>`) in turn:
`python -m bench [NAME ...]`. The other modules of bench/ are what they share."""
import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("approvals", "chat", "cpus", "emulators", "git", "github", "hermes", "locks", "relay",
           "runtime")


def main(argv):
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run benchmarks that print ratios measured side by side in one run "
                    "(no nginx or PHP needed).")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"which to run (default: all): {', '.join(SCRIPTS)}")
    names = [name.removeprefix("bench_") for name in parser.parse_args(argv).names] or list(SCRIPTS)
    unknown = [name for name in names if name not in SCRIPTS]
    if unknown:
        parser.error(f"no benchmark {unknown[0]!r}; there are: {', '.join(SCRIPTS)}")
    failed = 0
    for name in names:
        print(f"== {name}", flush=True)
        # as a module from the checkout, so bench/ never shadows a package (bench/github.py)
        failed |= subprocess.call([sys.executable, "-m", f"bench.{name}"], cwd=HERE.parent)
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
