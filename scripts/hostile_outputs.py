"""Issue 18's stress check of the output transaction: concurrent runs and kills at random moments.

    python scripts/hostile_outputs.py                      # the defaults: 10 rounds, 10 kills, n = 20,000
    python scripts/hostile_outputs.py --concurrent 100 --kills 50 --n 200000 --work /tmp/hostile   # longer

Part 1: ``--concurrent`` rounds of two ``er run`` processes started together into ONE folder (the
shipped documents job at two thresholds, so that their outputs differ). Part 2: ``--kills`` runs of a
link job of ``--n`` x ``--n`` generated customers (configs/customers.yaml, paths changed, at two
thresholds) into a folder holding the other threshold's outputs, each sent SIGINT or SIGKILL (half
each) at a uniformly random moment of its expected duration. After every round the folder is checked
as it is, before any er command could repair it: the output files present are exactly those its
report.json lists, report.html names report.json's config hash, and pairs.csv is byte-identical to
that config's reference output; no process of the run's process group is left alive. A folder with
an unfinished commit journal is counted (and then completed by ``er report``, and checked again).
Prints one JSON line per part and exits 1 if any round failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's er_framework, as the er processes it starts (python -m from here)
from er_framework.io.outputs import OUTPUT_NAMES  # noqa: E402 - after the path is set

#: every name er writes into an output folder (verified_pairs, comparisons, model.json included)
NAMES = OUTPUT_NAMES
#: the er processes run this checkout's code too, wherever the script is started from
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}


def er(*args: str | Path, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "er_framework.cli.main", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=ENV,
        **kw,
    )  # type: ignore[call-overload]


def check(out: Path, refs: dict[str, bytes]) -> str:
    """'' when ``out`` holds one run's complete outputs, else what is wrong."""
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"report.json unreadable: {exc}"
    present = {p.name for p in out.iterdir() if p.name in NAMES}
    if present != set(report.get("outputs", ())):
        return f"files {sorted(present)} but report.json lists {report.get('outputs')}"
    h = report["config_hash"]
    if h not in refs:
        return f"unknown config hash {h}"
    if h not in (out / "report.html").read_text(encoding="utf-8"):
        return "report.html is from another run"
    if (out / "pairs.csv").read_bytes() != refs[h]:
        return "pairs.csv is from another run"
    return ""


def group_alive(pgid: int) -> bool:
    for _ in range(60):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.05)
    return True


def variant(job: Path, threshold: float, folder: Path) -> Path:
    """A copy of the job with its threshold changed and its source paths made absolute."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in job.read_text(encoding="utf-8").splitlines():
        stripped = line.split("#")[0].rstrip()
        if stripped.lstrip().startswith("threshold:"):
            line = line[: len(line) - len(line.lstrip())] + f"threshold: {threshold}"
        if stripped.lstrip().startswith("path:"):
            rel = stripped.split("path:", 1)[1].strip()
            line = line.split("path:")[0] + f"path: {(job.parent / rel).resolve()}"
        if stripped.startswith("output:") or stripped.lstrip().startswith(("dir:", "format:", "candidates:")):
            continue
        lines.append(line)
    path = folder / "job.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def references(jobs: list[Path], work: Path) -> tuple[dict[str, bytes], list[float]]:
    refs: dict[str, bytes] = {}
    seconds = []
    for i, job in enumerate(jobs):
        out = work / f"ref-{i}"
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        p = er("run", job, "--out", out, "-q")
        _, err = p.communicate()
        seconds.append(time.perf_counter() - t)
        if p.returncode != 0:
            raise SystemExit(f"reference run failed: {err.decode()}")
        refs[json.loads((out / "report.json").read_text())["config_hash"]] = (out / "pairs.csv").read_bytes()
    if len(set(refs.values())) != len(jobs):
        raise SystemExit("the variants give the same pairs: choose other thresholds")
    return refs, seconds


def concurrent(rounds: int, work: Path) -> dict[str, object]:
    jobs = [variant(ROOT / "configs" / "documents.yaml", t, work / f"doc-{t}") for t in (0.8, 0.5)]
    refs, _ = references(jobs, work)
    out = work / "concurrent"
    shutil.rmtree(out, ignore_errors=True)
    failures, winners = [], {h: 0 for h in refs}
    t0 = time.perf_counter()
    for r in range(rounds):
        procs = [er("run", j, "--out", out, "-q") for j in jobs]
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                failures.append(f"round {r}: exit {p.returncode}: {err.decode()[-300:]}")
        problem = check(out, refs)
        if problem:
            failures.append(f"round {r}: {problem}")
        else:
            winners[json.loads((out / "report.json").read_text())["config_hash"]] += 1
        if any(e.startswith(".er-tmp-") for e in os.listdir(out)):
            failures.append(f"round {r}: a temporary folder was left")
    return {
        "part": "concurrent",
        "rounds": rounds,
        "failures": failures,
        "last_writer_counts": list(winners.values()),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def kills(n_kills: int, n: int, work: Path, seed: int) -> dict[str, object]:
    data = work / f"customers-{n}"
    if not (data / "b.csv").exists():
        subprocess.run(
            [sys.executable, "-m", "er_framework.cli.main", "synth", "customers", "--n", str(n), "--out", str(data)],
            check=True,
            stdout=subprocess.DEVNULL,
            env=ENV,
        )
    base = work / "customers-job" / "customers.yaml"
    base.parent.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "configs" / "customers.yaml").read_text(encoding="utf-8")
    text = text.replace("data/customers/a.csv", str(data / "a.csv")).replace("data/customers/b.csv", str(data / "b.csv"))
    base.write_text(text, encoding="utf-8")
    jobs = [variant(base, t, work / f"cust-{t}") for t in (0.9, 0.5)]
    refs, seconds = references(jobs, work)
    out = work / "killed"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(work / "ref-0", out)
    rng = random.Random(seed)
    failures: list[str] = []
    journals = completed = 0
    signalled = {"SIGINT": 0, "SIGKILL": 0}
    for k in range(n_kills):
        i = rng.randrange(2)
        sig = signal.SIGINT if k % 2 == 0 else signal.SIGKILL
        delay = rng.uniform(0, seconds[i])
        p = er("run", jobs[i], "--out", out, "-q")
        time.sleep(delay)
        if p.poll() is None:
            os.killpg(p.pid, sig) if sig == signal.SIGKILL else p.send_signal(sig)
            signalled[signal.Signals(sig).name] += 1
        _, err = p.communicate()
        if p.returncode == 0:
            completed += 1
        if b"Traceback" in err:
            failures.append(f"kill {k}: a traceback: {err.decode()[-300:]}")
        if group_alive(p.pid):
            failures.append(f"kill {k}: a process of the run outlived it")
            os.killpg(p.pid, signal.SIGKILL)
        if (out / ".er-commit.json").exists():
            journals += 1
            subprocess.run(
                [sys.executable, "-m", "er_framework.cli.main", "report", str(out)], stdout=subprocess.DEVNULL, check=False, env=ENV
            )
        problem = check(out, refs)
        if problem:
            failures.append(f"kill {k} ({signal.Signals(sig).name} after {delay:.2f} s): {problem}")
    return {
        "part": "kills",
        "n": n,
        "kills": n_kills,
        "reference_seconds": [round(s, 2) for s in seconds],
        "signalled_while_running": signalled,
        "exit_0_anyway": completed,
        "unfinished_journals": journals,
        "failures": failures,
    }


def main() -> int:
    # started in the background (`&`, nohup) SIGINT is ignored, and so in every er started here: restore it,
    # or the SIGINT half of the kills would test nothing
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrent", type=int, default=10)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--n", type=int, default=20_000, help="customers per company for the kill part")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-concurrent", action="store_true")
    ap.add_argument("--work", type=Path, default=Path("/tmp/er-hostile"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    bad = False
    parts = [] if args.skip_concurrent else [lambda: concurrent(args.concurrent, args.work)]
    parts.append(lambda: kills(args.kills, args.n, args.work, args.seed))
    for part in parts:
        result = part()
        print(json.dumps(result), flush=True)
        bad |= bool(result["failures"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
