"""An output folder as one transaction: checked before the job, staged, swapped in under a lock.

A run's outputs (pairs, clusters, candidates, report.json, report.html) are a
set: a reader must never see pairs of one run beside the report of another.
So:

1. :func:`check_output_dir` runs before any work. It refuses an empty-string
   folder (an unset shell variable), a folder where an output name is an
   input of the job (that input would be overwritten - refused even with
   ``--force``), a folder that holds an input, and a folder that holds files
   er did not write (both unless ``force``); and it checks that the folder
   can be written, so that a wrong ``--out`` costs no job.
2. :class:`OutputStage` is a temporary folder ``OUT/.er-tmp-*`` beside the
   outputs, where the whole set is written (and report.html drawn from it).
   While the run lives it holds a lock on ``.er-tmp-*/.alive``: a stage
   whose lock is free belongs to a dead run and is removed by the next one.
3. :meth:`OutputStage.commit` fsyncs the staged files (together, on threads:
   they are written unsynced) and the stage, takes the folder's exclusive
   lock (``flock`` on the folder itself, so no lock file is left), and then:

   a. keeps every current file it will replace or remove (the stale outputs:
      ``candidates.csv`` of an earlier run that wrote none, CSV beside new
      Parquet, …) in the stage as a backup, ``STAGE/.old-NAME`` (a hard link;
      a copy where the file system refuses one), fsynced. The folder has not
      changed yet: a failure here leaves it as it was;
   b. writes the journal ``OUT/.er-commit.json`` (renamed into place whole):
      the stage, the files it brings, the stale outputs it removes, the
      backups, and the state ``commit``;
   c. removes the stale outputs, moves every staged file into place and
      deletes the journal. SIGINT and SIGTERM are held back for those few
      renames.

   **Rollback.** If a step of (c) fails (a target made immutable, a mount
   point or a folder in the way, a full disk …), the journal's state becomes
   ``rollback`` and the previous set is put back: each backup is renamed
   over its name (unless that file was never replaced), and a file the
   commit brought under a name that had none goes back into the stage. The
   folder is then byte for byte as before and the error says so. If even the
   rollback fails, the journal and the stage are kept and the message names
   the files of each run; the next command that opens the folder finishes
   the job.

   **Recovery** (:func:`recover`, run under the lock by ``er run``, ``er
   report``, ``er evaluate`` and every commit before its own). A journal
   left by a killed or failed commit is finished in one direction: *forward*
   (the stale outputs removed, the remaining staged files moved in) when its
   state is ``commit`` and every file of the new set is still in the stage
   or already in the folder (renames are atomic, so a file gone from the
   stage was moved in; a moved file whose backup is gone was undone);
   otherwise, or when moving forward fails, *back* to the previous set as
   above. Both directions are idempotent, so a kill during a recovery is
   recovered the same way. Once any er command has looked at the folder it
   holds the previous set or the new one, never a mix. Stages of dead runs
   (their ``.alive`` lock is free) are removed, except the one a journal
   still names.

**Dataset folders.** A table written in parts by the workers of a Dask run
(:mod:`er_framework.io.part_tables`) may be a Parquet dataset, the folder
``pairs/`` (its parts and ``_manifest.json``): such a folder is one entry of
the set like a file. Its backup is a folder of hard links (or copies) of its
files; moving it in removes the previous folder first (its manifest first, so
a half-removed folder is never taken for a dataset); a rollback or recovery
puts the backup folder back whole. ``replace_all`` removes a stale dataset
folder beside a new ``pairs.parquet`` file and a stale file beside a new
dataset, but never a folder that is not a dataset er wrote
(:func:`~er_framework.io.output_names.is_dataset_dir`): one in the way of an
output is an error before anything changes.

Two runs into one folder each commit their own complete set; the later
commit wins. Files of the tool's names are recognized as er's by the
``report.json`` beside them (an er report names the files it came with in
``outputs``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from er_framework.errors import InputError, Problem, naming_file, os_problem
from er_framework.io.output_names import (
    DATASET_MANIFEST,
    JOURNAL,
    MAX_REPORT_BYTES,
    OUTPUT_DATASETS,
    OUTPUT_NAMES,
    OUTPUT_TABLES,
    STAGE_PREFIX,
    is_dataset_dir,
    is_er_output,
)
from er_framework.io.report_json import check_report, is_job_file

try:  # POSIX; elsewhere the folder is not locked (one writer at a time is then the user's care)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "fsync_dir",
    "sync_files",
    "BACKUP_PREFIX",
    "CommitUndone",
    "JOURNAL",
    "OUTPUT_NAMES",
    "STAGE_PREFIX",
    "OUTPUT_TABLES",
    "find_job_file",
    "read_report",
    "OutputDir",
    "OutputStage",
    "check_output_dir",
    "is_er_output",
    "publish",
    "recover",
]

#: an old output kept in the stage during a commit: ``STAGE/.old-NAME`` (a hard link, or a copy)
BACKUP_PREFIX = ".old-"
_ALIVE = ".alive"
#: a temporary folder without a lock file (written by an older version or by write_outputs) is stale after this
_STALE_SECONDS = 3600.0
_LISTED = 5


# ------------------------------------------------------------------ checks before the job


@dataclass(frozen=True)
class OutputDir:
    """An output folder given with ``force`` (``er run --force``): write into a folder that holds an input or
    files er did not write (an input is still never overwritten)."""

    path: str | Path
    force: bool = False


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def check_output_dir(
    out: str | Path | None,
    inputs: Sequence[tuple[str, Path]],
    *,
    force: bool = False,
    where: str = "--out",
) -> Path:
    """The output folder, checked before any work (see the module docstring); raises :class:`InputError`.

    ``inputs`` are ``(what, path)`` of every input of the job (the job file, each source file or page
    folder); ``where`` names the setting the folder came from, for the message.
    """
    if out is None or str(out).strip() == "":
        raise InputError(
            Problem(
                where=where,
                message=f"the output folder is an empty string ({str(out)!r}: an unset shell variable?)",
                fix="give a folder name, e.g. --out out/run1",
            )
        )
    folder = Path(out).expanduser().absolute()
    real = Path(os.path.realpath(folder))
    for what, path in inputs:
        target = Path(os.path.realpath(path))
        if target.parent == real and target.name in OUTPUT_NAMES:
            raise InputError(
                Problem(
                    where=where,
                    message=f"{folder / target.name} is an input of this job ({what}); writing the outputs "
                    f"into {folder} would overwrite it",
                    fix="choose another output folder (--out DIR); er never overwrites an input, even with --force",
                )
            )
    if folder.exists() and not folder.is_dir():
        raise InputError(
            Problem(where=where, message=f"{folder} is a file, not a folder", fix="choose an output folder that is not an existing file")
        )
    if not force:
        held = [f"{what} ({path})" for what, path in inputs if _inside(Path(os.path.realpath(path)), real)]
        if held:
            raise InputError(
                Problem(
                    where=where,
                    message=f"the output folder {folder} holds an input of this job: {_listing(held)}; "
                    "its outputs would be mixed with the data",
                    fix=f"choose a separate output folder (e.g. --out {folder / 'er-out'}), or pass --force to write "
                    "here anyway (inputs are never overwritten)",
                )
            )
        foreign = _foreign_entries(folder)
        if foreign:
            ours = [n for n in foreign if n in OUTPUT_NAMES]
            why = (
                f"{_listing(ours)} {'was' if len(ours) == 1 else 'were'} not written by er (no report.json of an er run beside them)"
                if ours
                else f"it holds files er did not write: {_listing(foreign)}"
            )
            raise InputError(
                Problem(
                    where=where,
                    message=f"the output folder {folder} is not empty and {why}",
                    fix="choose a new or empty folder, or pass --force to write beside them (er then replaces only "
                    "files of its own output names: " + ", ".join(f"{t}.*" for t in OUTPUT_TABLES) + ", report.json, report.html)",
                )
            )
    _check_writable(folder, where)
    return folder


def _foreign_entries(folder: Path) -> list[str]:
    """Entries of ``folder`` that no er run wrote (er's own hidden files aside)."""
    try:
        entries = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError:
        return []  # unreadable: _check_writable says why
    ours = is_er_output(folder)
    return [
        e + ("/" if (folder / e).is_dir() else "") for e in entries if e not in ours and e != JOURNAL and not e.startswith(STAGE_PREFIX)
    ]


def _check_writable(folder: Path, where: str) -> None:
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(
            Problem(
                where=where,
                message=f"cannot create {folder}: {probe} is a file, not a folder",
                fix="choose an output folder whose parents are folders",
            )
        )
    try:
        fd, name = tempfile.mkstemp(prefix=STAGE_PREFIX + "probe-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise InputError(
            Problem(
                where=where,
                message=f"cannot write into {probe}: {exc.strerror or exc}",
                fix="choose an output folder you can write to (or fix its permissions / free space)",
            )
        ) from None


# ------------------------------------------------------------------ the lock and the journal


@contextlib.contextmanager
def _folder_lock(out: Path) -> Iterator[None]:
    """The folder's exclusive lock (``flock`` on the folder; blocking; released when the process dies)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(out, os.O_RDONLY)  # the folder itself is locked: no lock file is left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the files are swapped (delivered right after)."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - no pthread_sigmask
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def sync_files(paths: Sequence[Path]) -> None:
    """fsync every file, on threads: the file system commits concurrent flushes together (measured here,
    5 files of 200 kB: 6-13 ms one after the other, 3.5-6 ms at once)."""

    def one(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    if len(paths) <= 1:
        for path in paths:
            one(path)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, len(paths)), thread_name_prefix="er-fsync") as pool:
        list(pool.map(one, paths))


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _is_tree(path: Path) -> bool:
    """``path`` is a folder (a dataset output or its backup), not a symlink to one."""
    return path.is_dir() and not path.is_symlink()


def _remove_entry(path: Path) -> None:
    """Remove an output: a file (or symlink) unlinked; a dataset folder removed, its manifest first (a folder
    half removed is then no dataset for a reader). A missing one is no error."""
    if _is_tree(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path / DATASET_MANIFEST)
        shutil.rmtree(path)
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _apply(out: Path, stage: Path, files: Sequence[str], remove: Sequence[str]) -> None:
    """Remove the stale outputs, move the staged files and dataset folders in (idempotent: a roll-forward
    repeats it)."""
    for name in remove:
        _remove_entry(out / name)
    for name in files:
        src = stage / name
        if os.path.lexists(src):
            if _is_tree(out / name):
                if not _is_tree(src):
                    raise IsADirectoryError(21, "a folder is in the way of an output file", str(out / name))
                _remove_entry(out / name)  # the previous dataset (kept as the backup)
            os.replace(src, out / name)
    fsync_dir(out)


def _test_pause(point: str) -> None:
    """For the crash tests only: ``ER_TEST_PAUSE=POINT:MARKER`` creates the file MARKER at POINT
    (``before_commit``: staged, lock not taken; ``in_commit``: journal written, nothing moved) and waits
    until the test removes it (at most 60 s), so that a test can signal the process exactly there or change
    the folder before the run goes on."""
    spec = os.environ.get("ER_TEST_PAUSE", "")
    if spec.partition(":")[0] == point:
        marker = Path(spec.partition(":")[2])
        marker.touch()
        deadline = time.monotonic() + 60
        while marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)


def _backup_name(name: str) -> str:
    return BACKUP_PREFIX + name


def _same_entry(a: Path, b: Path) -> bool:
    """:func:`_same_file`, or for two folders (a dataset and its backup): the same names, each the same file."""
    if not (_is_tree(a) or _is_tree(b)):
        return _same_file(a, b)
    try:
        names = sorted(os.listdir(a))
        if not (_is_tree(a) and _is_tree(b)) or names != sorted(os.listdir(b)):
            return False
    except OSError:
        return False
    return all(_same_file(a / n, b / n) for n in names)


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file (a hard link) or regular files of equal bytes (a copy)."""
    try:
        if os.path.samefile(a, b):
            return True
        sa, sb = os.lstat(a), os.lstat(b)
        if not (stat.S_ISREG(sa.st_mode) and stat.S_ISREG(sb.st_mode)) or sa.st_size != sb.st_size:
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                x, y = fa.read(1 << 20), fb.read(1 << 20)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False


def _back_up(out: Path, stage: Path, names: Sequence[str]) -> list[str]:
    """Keep the folder's current files ``names`` in the stage (a hard link, or a copy where the file system
    refuses one), durable before the journal names them; returns the names kept. Nothing in ``out`` changes."""
    kept: list[str] = []
    copies: list[Path] = []
    for name in names:
        src, dst = out / name, stage / _backup_name(name)
        if not os.path.lexists(src):
            continue
        if _is_tree(src):
            dst.mkdir()
            for entry in sorted(os.listdir(src)):
                _link_or_copy(src / entry, dst / entry, copies)
            fsync_dir(dst)
        else:
            _link_or_copy(src, dst, copies)
        kept.append(name)
    if copies:
        sync_files(copies)
    fsync_dir(stage)
    return kept


def _link_or_copy(src: Path, dst: Path, copies: list[Path]) -> None:
    """``dst`` a hard link of ``src`` (a copy, added to ``copies`` to be fsynced, where the file system refuses one)."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)
        if not dst.is_symlink():
            copies.append(dst)


def _write_journal(out: Path, stage: Path, plan: dict[str, Any]) -> None:
    tmp = stage / JOURNAL
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(plan))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out / JOURNAL)
    fsync_dir(out)


def _all_new_present(out: Path, stage: Path, files: Sequence[str], backups: Sequence[str]) -> bool:
    """Every file of the new set is still in the stage or already moved into the folder (a file gone from the
    stage was moved: renames are atomic; a moved file whose backup was put back over it is gone)."""
    for name in files:
        if os.path.lexists(stage / name):
            continue
        if not os.path.lexists(out / name):
            return False
        if name in backups and not os.path.lexists(stage / _backup_name(name)):
            return False  # a rollback put the old file back over it
    return True


def _undo(out: Path, stage: Path, files: Sequence[str], remove: Sequence[str], backups: Sequence[str]) -> None:
    """Put the previous set back (idempotent: a recovery repeats it): every kept old file returns to its
    name, and a file the commit brought under a name that had none goes back into the stage."""
    for name in (*files, *remove):
        target, backup = out / name, stage / _backup_name(name)
        if name in backups:
            if not os.path.lexists(backup):
                continue  # already put back
            if os.path.lexists(target) and _same_entry(target, backup):
                continue  # never replaced (the commit stopped before it)
            if _is_tree(target):
                _remove_entry(target)  # the new dataset, or the previous one half removed (its backup is whole)
            os.replace(backup, target)
        elif name in files and not os.path.lexists(stage / name) and os.path.lexists(target):
            os.replace(target, stage / name)
    fsync_dir(out)


def _which_run(out: Path, stage: Path, files: Sequence[str], remove: Sequence[str], backups: Sequence[str]) -> tuple[list[str], list[str]]:
    """After a failed rollback: the output names in ``out`` from the new run and those from the previous one."""
    new: list[str] = []
    old: list[str] = []
    for name in dict.fromkeys((*files, *remove)):
        target, backup = out / name, stage / _backup_name(name)
        if not os.path.lexists(target):
            continue
        if name in backups and os.path.lexists(backup) and _same_entry(target, backup):
            old.append(name)
        elif name in files and not os.path.lexists(stage / name) and (name not in backups or os.path.lexists(backup)):
            new.append(name)
        else:
            old.append(name)
    return new, old


class CommitUndone(OSError):
    """A commit failed and its rollback failed too: the folder holds files of two runs until the next
    command completes or undoes the commit (its journal is kept)."""

    def __init__(self, cause: OSError, second: OSError, new: list[str], old: list[str]) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.cause, self.second, self.new, self.old = cause, second, new, old


def _commit(out: Path, stage: Path, files: Sequence[str], remove: Sequence[str]) -> None:
    """Back up, journal, apply; on a failure put the previous set back (see the module docstring)."""
    backups = _back_up(out, stage, list(dict.fromkeys((*files, *remove))))
    plan: dict[str, Any] = {"stage": stage.name, "files": list(files), "remove": list(remove), "backups": backups, "state": "commit"}
    _write_journal(out, stage, plan)
    _test_pause("in_commit")
    try:
        _apply(out, stage, files, remove)
    except OSError as exc:
        plan["state"] = "rollback"
        try:
            with contextlib.suppress(OSError):  # a full disk may refuse the journal: the rollback goes on
                _write_journal(out, stage, plan)
            _undo(out, stage, files, remove, backups)
        except OSError as second:
            new, old = _which_run(out, stage, files, remove, backups)
            raise CommitUndone(exc, second, new, old) from None
        with contextlib.suppress(OSError):  # left behind, it is a rollback a recovery repeats as a no-op
            os.unlink(out / JOURNAL)
        fsync_dir(out)
        raise
    with contextlib.suppress(OSError):  # left behind, it is a commit a recovery completes as a no-op
        os.unlink(out / JOURNAL)
    fsync_dir(out)


def _read_journal(out: Path) -> dict[str, Any] | None:
    """The journal's plan, checked (None: no journal; an unreadable or foreign one is removed: it was never
    completely written - it is renamed into place whole - or is not er's, and nothing was moved by it)."""
    journal = out / JOURNAL
    try:
        plan = json.loads(journal.read_text(encoding="utf-8"))
        stage = str(plan["stage"])
        files = [str(n) for n in plan["files"]]
        remove = [str(n) for n in plan["remove"]]
        backups = [str(n) for n in plan.get("backups", [])]
        state = str(plan.get("state", "commit"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        os.unlink(journal)
        return None
    bad = [n for n in (*files, *remove, *backups) if n not in OUTPUT_NAMES]
    if bad or not stage.startswith(STAGE_PREFIX) or "/" in stage or state not in ("commit", "rollback"):
        os.unlink(journal)  # not ours: move nothing
        return None
    return {"stage": stage, "files": files, "remove": remove, "backups": backups, "state": state}


def _roll_forward(out: Path) -> None:
    """Finish an interrupted commit (the lock is held): forward when its journal says ``commit`` and every
    new file is still staged or moved in, otherwise (or when moving forward fails) back to the previous set.
    Raises OSError when neither direction can be completed (the journal stays for the next command)."""
    plan = _read_journal(out)
    if plan is None:
        return
    stage = out / plan["stage"]
    files, remove, backups = plan["files"], plan["remove"], plan["backups"]
    if not stage.is_dir():  # a finished commit or rollback whose journal could not be deleted (the stage goes last)
        os.unlink(out / JOURNAL)
        return
    if plan["state"] == "commit" and _all_new_present(out, stage, files, backups):
        try:
            _apply(out, stage, files, remove)
        except OSError:
            plan["state"] = "rollback"
            if stage.is_dir():
                with contextlib.suppress(OSError):
                    _write_journal(out, stage, plan)
        else:
            os.unlink(out / JOURNAL)
            fsync_dir(out)
            return
    _undo(out, stage, files, remove, backups)
    os.unlink(out / JOURNAL)
    fsync_dir(out)


def _journal_stage(out: Path) -> str:
    try:
        return str(json.loads((out / JOURNAL).read_text(encoding="utf-8"))["stage"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _clear_stale_stages(out: Path) -> None:
    """Remove the temporary folders of runs that died (their ``.alive`` lock is free)."""
    try:
        entries = [e for e in os.listdir(out) if e.startswith(STAGE_PREFIX)]
    except OSError:
        return
    pending = _journal_stage(out)  # the stage of an unfinished commit holds its files and backups: kept
    for name in entries:
        path = out / name
        if not path.is_dir() or path.is_symlink() or name == pending:
            continue
        alive = path / _ALIVE
        if alive.exists():
            if fcntl is None:  # pragma: no cover
                continue
            try:
                fd = os.open(alive, os.O_RDWR)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # a live run
            os.close(fd)
        else:
            try:
                if time.time() - path.stat().st_mtime < _STALE_SECONDS:
                    continue
            except OSError:
                continue
        shutil.rmtree(path, ignore_errors=True)


def recover(out: str | Path) -> None:
    """Complete an interrupted commit in ``out`` and remove dead runs' temporary folders (no-op elsewhere)."""
    folder = Path(out)
    if not (folder / JOURNAL).exists() and not any(e.startswith(STAGE_PREFIX) for e in _names(folder)):
        return
    try:
        with _folder_lock(folder):
            _roll_forward(folder)
            _clear_stale_stages(folder)
    except OSError:
        pass  # a read-only folder: nothing can be completed, the reader sees what is there


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _is_output(path: Path, name: str) -> bool:
    """``path`` (of the output name ``name``) is an output er wrote: a regular file, or a dataset folder."""
    return is_dataset_dir(path) if name in OUTPUT_DATASETS else path.is_file()


def _check_in_the_way(out: Path, files: Sequence[str]) -> None:
    """An OSError when a folder is where an output file goes, or anything but er's dataset folder is where a
    dataset goes (nothing has changed yet)."""
    for name in files:
        target = out / name
        if name in OUTPUT_DATASETS:
            if os.path.lexists(target) and not is_dataset_dir(target):
                raise FileExistsError(17, "something that is not a dataset folder er wrote is in the way of an output folder", str(target))
        elif target.is_dir():
            raise IsADirectoryError(21, "a folder is in the way of an output file", str(target))


# ------------------------------------------------------------------ the stage


class OutputStage:
    """A temporary folder in ``out`` where a whole output set is written, then committed as one.

    Use as a context manager: the folder is removed on exit unless committed (and an output folder that
    this stage created is removed again when it stays empty)::

        with OutputStage(out) as stage:
            (stage.path / "report.json").write_text(...)
            stage.commit(["report.json"], replace_all=True)
    """

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.path = self.out  # set on enter
        self._alive: IO[str] | None = None
        self._created = False
        self._keep_stage = False
        self.committed = False

    def __enter__(self) -> OutputStage:
        try:
            self._created = not self.out.exists()
            self.out.mkdir(parents=True, exist_ok=True)
            recover(self.out)
            self.path = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=self.out))
            self._alive = open(self.path / _ALIVE, "w", encoding="utf-8")
            if fcntl is not None:
                fcntl.flock(self._alive.fileno(), fcntl.LOCK_EX)
        except OSError as exc:
            self._cleanup()
            raise InputError(
                Problem(
                    where=str(self.out),
                    message=f"cannot write outputs: {exc.strerror or exc} ({exc.filename or self.out})",
                    fix="check the output folder (permissions, free space, a file in the way)",
                )
            ) from None
        return self

    def write_text(self, name: str, text: str) -> None:
        """Write ``name`` into the stage (UTF-8; fsynced by :meth:`commit`, with the other files)."""
        with naming_file(self.path / name), open(self.path / name, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)

    def commit(self, files: Sequence[str], *, replace_all: bool) -> dict[str, Path]:
        """Move ``files`` from the stage into the folder as one unit; with ``replace_all``, every other
        output name of the tool in the folder is removed (the folder then holds exactly this set).

        On any failure the folder keeps (or gets back) the previous set and :class:`InputError` says so; if
        even that fails, the error names the files of each run (see the module docstring: rollback)."""
        for name in files:
            if name not in OUTPUT_NAMES:
                raise ValueError(f"{name!r} is not an output name of er")
            if name in OUTPUT_DATASETS and not is_dataset_dir(self.path / name):
                raise ValueError(f"{name!r} in the stage is not a dataset folder with its {DATASET_MANIFEST} (assemble it first)")
        stale: list[str] = []
        _test_pause("before_commit")
        try:
            self._sync(files)
            _check_in_the_way(self.out, files)
            with _folder_lock(self.out), _signals_held():
                _roll_forward(self.out)
                if replace_all:
                    stale = sorted(n for n in OUTPUT_NAMES - set(files) if _is_output(self.out / n, n))
                _commit(self.out, self.path, files, stale)
                self.committed = True
        except CommitUndone as exc:
            self._keep_stage = True  # its journal names it: the next command completes or undoes the commit from it
            raise InputError(
                Problem(
                    where=str(self.out),
                    message=f"cannot write outputs: {exc.strerror or exc} ({exc.filename or self.out}), and putting the "
                    f"previous outputs back failed too ({exc.second.strerror or exc.second}): the folder now holds "
                    f"{_listing(exc.new) if exc.new else 'no file'} from this run and "
                    f"{_listing(exc.old) if exc.old else 'no file'} from the previous run",
                    fix=f"fix the cause (permissions, free space, a folder or mount in the way); the next er run or "
                    f"er report on {self.out} completes or undoes this commit (its journal {JOURNAL} is kept)",
                )
            ) from None
        except OSError as exc:
            raise InputError(
                Problem(
                    where=str(self.out),
                    message=f"cannot write outputs: {exc.strerror or exc} ({exc.filename or self.out})",
                    fix="check the output folder (permissions, free space, a folder in the way of "
                    "an output file); the previous outputs were left as they were",
                )
            ) from None
        return {name: self.out / name for name in files}

    def _sync(self, files: Sequence[str]) -> None:
        """fsync the staged files, the files of the staged dataset folders, those folders and the stage."""
        folders = [self.path / n for n in files if _is_tree(self.path / n)]
        inside = [f / e for f in folders for e in sorted(os.listdir(f))]
        sync_files([self.path / n for n in files if n not in OUTPUT_DATASETS] + inside)
        for folder in folders:
            fsync_dir(folder)
        fsync_dir(self.path)

    def _cleanup(self) -> None:
        if self._alive is not None:
            self._alive.close()
            self._alive = None
        if self.path != self.out and not self._keep_stage:
            shutil.rmtree(self.path, ignore_errors=True)
        if self._created and not self.committed:
            with contextlib.suppress(OSError):
                self.out.rmdir()  # only when empty

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._cleanup()


def publish(out: str | Path, texts: dict[str, str]) -> dict[str, Path]:
    """Replace the files ``name -> text`` in the output folder ``out`` as one unit (the other outputs stay)."""
    with OutputStage(out) as stage:
        for name, text in texts.items():
            stage.write_text(name, text)
        return stage.commit(list(texts), replace_all=False)


# ------------------------------------------------------------------ a finished run's folder


def read_report(out_dir: str | Path) -> dict[str, Any]:
    """report.json of the run written to ``out_dir``, checked by :func:`check_report`; an input error saying
    what is missing or wrong (never quoting the file)."""
    path = Path(out_dir) / "report.json"
    if not path.is_file():
        raise InputError(
            Problem(
                where=str(out_dir),
                message="no report.json here: not the output folder of an er run",
                fix="give the folder er run wrote (its --out or output.dir)",
            )
        )
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise InputError(os_problem(exc, str(path), "read report.json")) from None
    if len(raw) > MAX_REPORT_BYTES:
        why = f"larger than {MAX_REPORT_BYTES >> 20} MB"
    else:
        try:
            return check_report(json.loads(raw.decode("utf-8")), path)
        except UnicodeDecodeError:
            why = "not UTF-8 text"
        except RecursionError:
            why = "nested too deeply"
        except ValueError as exc:  # json.JSONDecodeError; its message names a position, not the text
            why = f"not JSON: {str(exc).split(':')[0]}"
    raise InputError(
        Problem(
            where="",
            message=f"{path} is not a report er wrote ({why})",
            fix="give the output folder of an er run, or run the job again to rewrite its outputs",
        )
    )


def find_job_file(report: dict[str, Any], out: Path, config_path: str | Path | None) -> tuple[Path | None, list[Path]]:
    """The job file of a run: ``config_path`` if given, else report.json's ``config`` (as recorded: from
    the current folder, then below the output folder and its parent). Returns it (None when not found) and
    the places tried. A file report.json names that is not a job (:func:`is_job_file`: a tampered report
    pointing at /etc/shadow) is an input error that never quotes the file."""
    if config_path is not None:
        p = Path(config_path)
        return (p.resolve() if p.is_file() else None), [p]
    recorded = report.get("config")
    if not recorded:
        return None, []
    p = Path(str(recorded))
    tried = [p] if p.is_absolute() else [Path.cwd() / p, out / p, out.parent / p]
    if report.get("config_resolved"):
        tried.append(Path(str(report["config_resolved"])))
    for candidate in tried:
        if candidate.is_file():
            if not is_job_file(candidate):
                raise InputError(
                    Problem(
                        where="",
                        message=f"{candidate} is not an er job file (report.json of {out} names it as the run's job)",
                        fix="pass the run's job file: --config JOB.yaml",
                    )
                )
            return candidate.resolve(), tried
    return None, tried
