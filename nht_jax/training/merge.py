"""`nht merge`: the complete shards of one grid (`nht_jax.training.shards`) joined into one results folder, the folder
`nht run` would have written without shards.

    nht merge OUT                         the shards in OUT/shards/I-of-K, merged into OUT
    nht merge SHARD_DIR ... --out OUT     the shard folders named, merged into OUT

Before anything is written, unfinished, foreign, duplicate and missing shards, an OUT of another configuration
and shards of different code (`code_check`; `--allow-mixed-code` merges them and records the mix) are each refused
in one line. The merge writes trajectories.npz, summary.csv, config.toml and meta.json in `nht run`'s order, every
array and summary.csv bit for bit those of the unsharded run (tested).

The merge rules, what meta.json records of the shards, and the code check: docs/guides/execution.md, "Shards and
job arrays"."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.experiment import Config
from nht_jax.measure import stopping, summaries
from nht_jax.results import folder as results
from nht_jax.results import lock
from nht_jax.results import provenance
from nht_jax.training import partition as shards
from nht_jax.results.blocks import merge_metrics, metrics_not_in_every_bucket
from nht_jax.training.progress import PROGRESS_LOG, ProgressLog

RUN_HINT = "run `nht run PRESET --shards {count} --shard {index} --out OUT` (the shard's own command) again"


def shard_folders(out: Path, count: int | None = None) -> tuple[list[Path], int]:
    """The shard folders in OUT/shards. ConfigError when there are none, or shards of several K without `count`.

    Args:
        out: the results folder.
        count: K, the shards the grid was cut into (None: the one K there).

    Returns:
        (folders, K).
    """
    base = Path(out) / shards.SHARDS_FOLDER
    found = sorted((s, p) for p in (base.iterdir() if base.is_dir() else ()) if (s := shards.of_name(p.name)))
    counts = sorted({s.count for s, _ in found})
    if count is None:
        if not counts:
            raise ConfigError(
                f"'{base}' holds no shard folders (I-of-K): train them with `nht run PRESET --shards K "
                f"--shard I --out {out}`, or name them: nht merge SHARD_DIR ... --out OUT"
            )
        if len(counts) > 1:
            raise ConfigError(
                f"'{base}' holds shards of {len(counts)} splits ({', '.join(f'K = {k}' for k in counts)}):"
                f" choose one with --shards K"
            )
        count = counts[0]
    return [p for s, p in found if s.count == count], count


def read_shard(path: Path) -> tuple[shards.Shard, results.FolderCheck]:
    """A complete shard folder's shard and check; one-line ConfigError when it is unfinished or not a shard."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"'{path}' is not a folder: name shard folders (OUT/shards/I-of-K) or OUT")
    lock.raise_if_held(path, "nht merge")
    found = results.check_folder(path)
    named = shards.of_name(path.name)
    hint = RUN_HINT.format(count=named.count, index=named.index) if named else "finish it with its `nht run` command"
    if found.meta is None:
        raise ConfigError(f"shard folder '{path}' is unfinished ({found.meta_problem}): {hint}, then merge")
    entry = found.meta.get("shard")
    if not isinstance(entry, dict):
        raise ConfigError(
            f"'{path}' is not a shard folder (its meta.json has no \"shard\" entry): merge shard folders, "
            f"written by `nht run … --shards K --shard I`"
        )
    shard = shards.Shard(int(entry["index"]), int(entry["count"]))
    if not found.complete:
        raise ConfigError(
            f"shard folder '{path}' holds damaged results ({found.files_problem}): "
            f"{RUN_HINT.format(count=shard.count, index=shard.index)} with --overwrite, then merge"
        )
    return shard, found


def check_set(found: list[tuple[shards.Shard, results.FolderCheck]]) -> tuple[Config, str, int]:
    """The shards form one complete split of one configuration → (its configuration, digest, K); else the one-line
    ConfigError of the first rule broken (foreign, duplicate, missing)."""
    first_shard, first = found[0]
    digest, count = first.meta["shard"]["config_digest"], first_shard.count
    for shard, check in found[1:]:
        if check.meta["shard"]["config_digest"] != digest:
            raise ConfigError(
                f"'{check.path}' is a shard of another configuration (digest "
                f"{check.meta['shard']['config_digest']}, not {digest} as '{first.path}'): merge the "
                f"shards of one grid"
            )
        if shard.count != count:
            raise ConfigError(
                f"'{check.path}' is a shard of a split into {shard.count}, not {count} as "
                f"'{first.path}': merge the shards of one split"
            )
    config = first.config
    if stopping.results_digest(config) != digest:
        raise ConfigError(f"'{first.path}': its config.toml is not the configuration its meta.json names")
    seen: dict[int, Path] = {}
    for shard, check in found:
        if shard.index in seen:
            raise ConfigError(f"{shard.label} is given twice: '{seen[shard.index]}' and '{check.path}'; keep one")
        seen[shard.index] = check.path
        expected = list(shards.runs_of(config, shard))
        if list(check.meta["shard"]["runs"]) != expected:
            raise ConfigError(
                f"'{check.path}' holds runs {check.meta['shard']['runs']}, not the block {expected} "
                f"of {shard.label}: it was not written by this version's partition"
            )
    missing = [i for i in range(count) if i not in seen]
    if missing:
        names = ", ".join(map(str, missing))
        raise ConfigError(
            f"shard{'s' if len(missing) > 1 else ''} {names} of {count} "
            f"{'are' if len(missing) > 1 else 'is'} missing: "
            f"{RUN_HINT.format(count=count, index=missing[0])}, then merge"
        )
    return config, digest, count


class CodeCheck(NamedTuple):
    """What `code_check` found: merged meta.json's "code", the verdict ("same", "unknown", "mixed") and the note to
    print and log ("" when the code is the same)."""

    entry: dict | None
    verdict: str
    note: str


def code_groups(found: list) -> str:
    """The shards grouped by the code that wrote them: "shards 0, 2 of 3 ran 0.1.0 at 4f1c2d3e; shard 1 of 3 ran
    …"."""
    groups: dict = {}
    for shard, check in found:
        groups.setdefault(provenance.code_key(check.meta.get("code")), []).append((shard, check.meta.get("code")))
    parts = []
    for members in groups.values():
        indices = ", ".join(str(shard.index) for shard, _ in members)
        many = "s" if len(members) > 1 else ""
        parts.append(f"shard{many} {indices} of {members[0][0].count} ran {provenance.describe(members[0][1])}")
    return "; ".join(parts)


def code_check(found: list, allow_mixed: bool) -> CodeCheck:
    """The shards' code against the rule "mixed code" (module docstring): one-line ConfigError naming the groups
    of shards and how to override, unless `allow_mixed`."""
    entries = [check.meta.get("code") for _, check in found]
    if provenance.same_code(entries):
        if entries[0] is None:
            return CodeCheck(
                None,
                "unknown",
                "note: the shards' meta.json record no code (written before nht_jax "
                "recorded it): merged without checking that one code trained them",
            )
        return CodeCheck(entries[0], "same", "")
    if not allow_mixed:
        raise ConfigError(
            f"shards of different code: {code_groups(found)}; their runs may differ. Train the odd "
            f"ones again with one code (their `nht run … --shards K --shard I --overwrite`), or pass "
            f"--allow-mixed-code to merge them anyway (meta.json records the mix)"
        )
    entry = {"mixed": True, "allowed_by": "--allow-mixed-code", "shards": entries}
    return CodeCheck(
        entry, "mixed", f"note: merged shards of different code (--allow-mixed-code): {code_groups(found)}"
    )


def read_arrays(path: Path) -> dict:
    """A shard's trajectories.npz, never unpickling: an object array (which nht_jax never writes) is refused in one
    line."""
    file = Path(path) / "trajectories.npz"
    try:
        with np.load(file, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as error:
        raise ConfigError(
            f"'{file}' holds what nht_jax never writes ({error}); it is not read: train that shard "
            f"again with its `nht run … --shards K --shard I --overwrite`"
        ) from None


def merged_meta(
    config: Config, digest: str, found: list, metrics: dict, sizes: list[int], code: CodeCheck | None = None
) -> dict:
    """meta.json of the merged folder (module docstring: which fields differ from an unsharded run's); `code` the
    shards' `code_check` (computed here, refusing mixed code, when None)."""
    code = code_check(found, False) if code is None else code
    metas = [check.meta for _, check in found]
    first = metas[0]
    meta = {key: value for key, value in first.items() if key not in ("files", "shard", "recovered", "profile")}
    meta.update(
        {
            "config_digest": digest,
            "runs": int(sum(sizes)),
            "steps": config.train.steps,
            "train_wall_s": round(sum(m.get("train_wall_s", 0.0) for m in metas), 2),
            "run_slices": sum(m.get("run_slices", 0) for m in metas),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    if "runs_stopped" in first:
        meta["runs_stopped"] = sum(m.get("runs_stopped", 0) for m in metas)
    if config.static:
        meta["buckets"] = [b for m in metas for b in m.get("buckets", [])]
        meta["buckets_done_before_resume"] = 0
        meta["metrics_not_in_every_bucket"] = metrics_not_in_every_bucket(metrics, sizes)
    meta["shards"] = {
        "count": len(found),
        "each": [
            {
                "folder": str(check.path),
                "runs": check.meta["shard"]["runs"],
                "train_wall_s": check.meta.get("train_wall_s"),
                "machine": check.meta.get("machine"),
                "devices": check.meta.get("devices"),
                "finished": check.meta.get("finished"),
                "profile": check.meta.get("profile"),
                "code": check.meta.get("code"),
            }
            for _, check in found
        ],
        "code": code.verdict,
        "merged_by_code": provenance.code_provenance(),
    }
    meta["code"] = code.entry
    return meta


def merge(folders: list[Path], out: Path, allow_mixed_code: bool = False) -> Path:
    """Merge the shard folders into the results folder `out` (module docstring), holding its lock.

    Args:
        folders: the shard folders.
        out: the results folder.
        allow_mixed_code: merge shards of different code (the rule "mixed code"), recording the mix.

    Returns:
        `out`.
    """
    if not folders:
        raise ConfigError("no shard folders to merge")
    found = sorted((read_shard(p) for p in folders), key=lambda sc: sc[0].index)
    config, digest, count = check_set(found)
    merged = results.check_folder(out) if Path(out).is_dir() else None  # merged before: said below, not refused
    code = (
        None
        if merged is not None and merged.complete and merged.digest == digest
        else code_check(found, allow_mixed_code)
    )
    out = Path(out)
    with contextlib.ExitStack() as held:
        out = results.prepare_out_dir(held.enter_context(lock.hold(out, "nht merge")))
        existing = results.check_folder(out)
        if existing.digest is not None and existing.digest != digest:
            raise ConfigError(
                f"'{out}' already holds results of another configuration: merge into another --out folder"
            )
        if existing.complete:
            print(f"{out} already holds the merged results of these {count} shards.")
            return out
        code = code or code_check(found, allow_mixed_code)
        arrays = [read_arrays(check.path) for _, check in found]
        sizes_per_shard = [check.meta["shard"]["runs"][1] - check.meta["shard"]["runs"][0] for _, check in found]
        steps = arrays[0]["step"]
        for (_, check), a in zip(found, arrays):
            if not np.array_equal(a["step"], steps):
                raise ConfigError(f"'{check.path}' logged other steps than '{found[0][1].path}'")
        metrics = merge_metrics(
            [
                ({k[len("metric/") :]: v for k, v in a.items() if k.startswith("metric/")}, n)
                for a, n in zip(arrays, sizes_per_shard)
            ]
        )
        runs = config.runs()
        stops = stopping.StopRule(config.stop, config.analysis).active
        stopped = np.concatenate([a["stopped_step"] for a in arrays]) if stops else None
        results.write_trajectories(out, steps, metrics, runs, config, stopped)
        rows = summaries.summarize(steps, metrics, runs, config)
        if stops:
            for row, step in zip(rows, stopped):
                row["stopped_step"] = float(step)
        results.write_summary(out, rows)
        atomic_write_text(out / "config.toml", experiment.to_toml(config))
        meta = merged_meta(config, digest, found, metrics, shards.bucket_sizes(config), code)
        results.write_meta(out, meta)
        log = ProgressLog(out / PROGRESS_LOG)
        if code.note:
            print(code.note)
            log.write(code.note.removeprefix("note: "))
        for (shard, check), n in zip(found, sizes_per_shard):
            log.write(
                f"{shard.label}: runs {check.meta['shard']['runs'][0]}–{check.meta['shard']['runs'][1] - 1} "
                f"({n}) from {check.path}, trained for {check.meta.get('train_wall_s', 0):.1f} s"
            )
        log.write(f"merged: {count} shards, {config.train.steps} steps × {len(rows)} runs; results written")
    return out


__all__ = ["merge", "shard_folders"]
