"""Run every bench/bench_*.py in turn: `python -m bench [NAME ...]`."""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names):
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem in names or s.stem[6:] in names]
    failed = 0
    for script in scripts:
        print(f"== {script.stem}", flush=True)
        failed |= subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
