"""Which code wrote a results folder: meta.json's "code" entry.

    {"version": "0.1.0",            nht_jax.__version__
     "commit": "4f1c…" | null,      the git commit of the checkout the package was imported from; null when it was
                                    not imported from a git checkout (`pip install .` elsewhere, a wheel) or git is
                                    missing or does not answer within GIT_TIMEOUT_S
     "dirty": false | true | null,  whether the package's own files (nht_jax/) differ from that commit: tracked
                                    changes, or untracked files git does not ignore; null without a commit
     "diff_sha256": "9e0b…" | null} sha256 of what makes it dirty (`git diff HEAD --binary -- nht_jax`, then each
                                    untracked file's name and bytes): two dirty trees at one commit hold the same
                                    code only when this agrees; null when clean or without a commit

Only the package counts: an edited test, doc or preset outside nht_jax/ changes no run. `same_code` is the rule
`nht merge` applies to shards (`nht_jax.training.merge`)."""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 5.0
"""Each git call's limit: a hung git (a network file system, a lock) costs a sweep at most this, then null."""

KEYS = ("version", "commit", "dirty", "diff_sha256")


def git(args: list[str], cwd: Path) -> bytes | None:
    """The stdout of `git ARGS` run in `cwd`; None when git is missing, fails or exceeds GIT_TIMEOUT_S.

    Args:
        args: git's arguments.
        cwd: where it runs.

    Returns:
        Its stdout, or None.
    """
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def package_dir() -> Path:
    """The folder of the imported nht_jax package."""
    import nht_jax

    return Path(nht_jax.__file__).resolve().parent


def checkout_state(package: Path) -> dict:
    """{"commit", "dirty", "diff_sha256"} of the git checkout holding `package` (module docstring); all None when
    `package` is not tracked by one (an installed copy inside some other repository's ignored folder included)."""
    unknown = {"commit": None, "dirty": None, "diff_sha256": None}
    if git(["ls-files", "--error-unmatch", "__init__.py"], package) is None:
        return unknown  # not a checkout, or the package is not this repository's own
    commit = git(["rev-parse", "HEAD"], package)
    diff = git(["diff", "HEAD", "--binary", "--", "."], package)
    untracked = git(["ls-files", "-z", "--others", "--exclude-standard", "--", "."], package)
    if commit is None or diff is None or untracked is None:
        return unknown
    digest = hashlib.sha256(diff)
    for name in sorted(filter(None, untracked.split(b"\0"))):
        digest.update(b"\0untracked\0" + name + b"\0")
        try:
            digest.update((package / name.decode(errors="surrogateescape")).read_bytes())
        except OSError:
            digest.update(b"\0unreadable\0")
    dirty = bool(diff or untracked.strip(b"\0"))
    return {"commit": commit.decode().strip(), "dirty": dirty, "diff_sha256": digest.hexdigest() if dirty else None}


def code_provenance() -> dict:
    """meta.json's "code" entry for the code running now (module docstring)."""
    import nht_jax

    return {"version": nht_jax.__version__, **checkout_state(package_dir())}


@functools.cache
def code_at_start() -> dict:
    """`code_provenance()` read once per process, when it first asks: `nht run` and `sweep()` ask as a sweep
    starts, before anything trains. A process runs the code it imported, so a commit or an edit made while it
    trains must not change what its folders record (read at the end, it did: a sweep started at one commit
    recorded the next). Read again after `code_at_start.cache_clear()`: a notebook that reloads edited modules
    (IPython's autoreload) should clear it, or restart, before the next sweep."""
    return code_provenance()


def code_key(entry) -> tuple | None:
    """What must agree between two folders' "code" entries for them to be of the same code; None for a folder
    without one (older code: unknown)."""
    if not isinstance(entry, dict):
        return None
    return tuple(entry.get(k) for k in KEYS)


def same_code(entries: list) -> bool:
    """Whether every entry is of one code: equal `code_key`s (versions, commits, dirty flags and diff hashes).
    Entries without a commit agree when their versions do (all that is known of an installed package); entries
    all unknown (None) agree, as one unknown; a mix of known and unknown does not."""
    return len({code_key(e) for e in entries}) <= 1


def describe(entry) -> str:
    """A short text of a "code" entry: "0.1.0 at 4f1c2d3e", "0.1.0 at 4f1c2d3e + changes 9e0b1a2c", "0.1.0 (no
    checkout)", "unknown (older code)".

    Args:
        entry: meta.json's "code" entry.

    Returns:
        The text.
    """
    if not isinstance(entry, dict):
        return "unknown (written before meta.json recorded its code)"
    version = entry.get("version", "?")
    if not entry.get("commit"):
        return f"{version} (not a git checkout)"
    text = f"{version} at {str(entry['commit'])[:8]}"
    return text + (f" + uncommitted changes {str(entry.get('diff_sha256'))[:8]}" if entry.get("dirty") else "")


__all__ = ["describe", "git"]
