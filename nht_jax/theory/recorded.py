"""`nht paper bound DIR`: the bounds of docs/science.md §2 checked along the recorded trajectories of a results directory.

Per run: V (the norm weight decay acts on), σ²_t (recorded gradient noise, 0 for full batch, else unknown), the
iterated one-step inequality over every logged interval, V_sc and V_st, the escape-time window
[T_fit + T_lower, T_fit + T_upper] (`escape_time_upper`, `escape_time_lower`), and the theory's assumptions (update
rule, η ≤ λ/L, V_st > V_∞, the realised contraction rate). A run that violates an assumption gets its window
anyway (marked), and the verdict names what fails.

Each definition and choice: docs/theory/recorded_runs.md; the bounds themselves: docs/theory/bounds.md."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from nht_jax.base.atomic import atomic_write_text, remove_stale_temporaries
from nht_jax.base.errors import ConfigError, check
from nht_jax.engine.contraction import Contraction
from nht_jax.engine.optim import declared_contraction
from nht_jax.results import lock
from nht_jax.results.folder import Results, load_results
from nht_jax.theory import bounds
from nht_jax.theory.realised_rate import aggregate, amplification, fit_after_peak

COLUMNS = (
    "run",
    "weight_decay",
    "learning_rate",
    "seed",
    "optimizer",
    "T_fit",
    "T_transition",
    "V_sc",
    "V_st",
    "V_final",
    "sigma2",
    "V_inf",
    "L_lower",
    "eta_max",
    "ineq_frac",
    "ineq_frac_after_fit",
    "ineq_worst_ratio",
    "c_assumed",
    "c_realised_max",
    "T_lower",
    "T_upper",
    "T_upper_paper",
    "delay",
    "position",
    "r",
    "rate",
    "gamma_eff",
    "amplification",
    "fit_status",
    "verdict",
)


def _norm_series(res: Results) -> tuple[str, np.ndarray]:
    name = "weight_norm_sq" if res.config.optim.decay_on == "weights" else "norm_sq"
    return name, np.asarray(res.metrics[name], np.float64)


def noise_series(res: Results) -> tuple[np.ndarray, str]:
    """σ² per (run, log) and where it comes from."""
    shape = res.metrics["norm_sq"].shape
    if "grad_noise_var" in res.metrics:
        return np.asarray(res.metrics["grad_noise_var"], np.float64), "recorded (grad_noise_var)"
    if res.config.train.batch_size == 0:
        return np.zeros(shape), "0 (full-batch training)"
    return np.full(shape, np.nan), "unknown: rerun with --set train.record_grad_noise=true"


def inequality_along(v, sigma2, eta, lam, k) -> tuple[np.ndarray, np.ndarray]:
    """(holds, ratio) per logged interval: V_{i+1} ≤ multi_step_bound(V_i, η, λ, max(σ²_i, σ²_{i+1}), k)."""
    s2 = np.maximum(sigma2[:-1], sigma2[1:])
    bound = bounds.multi_step_bound(v[:-1], eta, lam, s2, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = v[1:] / bound
    return ratio <= 1.0, ratio


def realised_c(v, eta, lam, k) -> np.ndarray:
    """Per logged interval, the c with V_{i+1} = (1 − cηλ)^k V_i: c = (1 − (V_{i+1}/V_i)^{1/k})/(ηλ)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 - (v[1:] / v[:-1]) ** (1.0 / k)) / (eta * lam)


def _log_text(steps) -> str:
    """ "every 50 steps", or "at 151 steps, every 5 to 50 steps" when the intervals vary."""
    gaps = np.diff(np.asarray(steps)).astype(int)
    if gaps.min() == gaps.max():
        return f"every {gaps[0]} steps"
    return f"at {len(steps)} steps, every {gaps.min()} to {gaps.max()} steps"


def _index(steps, t):
    return int(np.searchsorted(steps, t)) if np.isfinite(t) else None


def check_run(
    steps,
    v,
    sigma2,
    sharp,
    eta,
    lam,
    optimizer,
    t_fit,
    t_transition,
    momentum=0.9,
    contraction: Contraction | None = None,
) -> dict:
    """Every check of one run (docs/theory/recorded_runs.md). `contraction`: the run's declared γ_eff
    (`nht_jax.engine.optim.declared_contraction`, slots included); None = the optimiser's own rate."""
    gaps = np.diff(np.asarray(steps, np.float64))  # each logged interval's k (a logging schedule varies it)
    k = float(gaps[0]) if np.all(gaps == gaps[0]) else gaps
    out: dict = {"optimizer": optimizer, "T_fit": t_fit, "T_transition": t_transition}
    problems = []
    if optimizer != "sgd":
        problems.append(f"update rule ({optimizer})")
    if contraction is None:
        contraction = Contraction(np.asarray(bounds.gamma_eff(optimizer, eta, lam, momentum), np.float64))
    gamma = float(contraction.gamma)
    if not contraction.known:
        problems.append(f"γ_eff unknown ({contraction.reason})")
    fit = fit_after_peak(steps, v)
    out.update(
        {
            "r": fit["r"],
            "rate": fit["rate"],
            "fit_status": fit["status"],
            "gamma_eff": gamma,
            "amplification": float(amplification(fit["rate"], optimizer, eta, lam, momentum, gamma=gamma))
            if fit["status"] == "ok"
            else np.nan,
        }
    )
    out["V_final"] = float(v[-1])
    if lam <= 0:
        out.update(verdict="no weight decay (λ = 0): no contraction, the bounds do not apply")
        return out
    holds, ratio = inequality_along(v, sigma2, eta, lam, k)
    valid = np.isfinite(ratio)
    out["ineq_frac"] = float(holds[valid].mean()) if valid.any() else np.nan
    i_fit = _index(steps, t_fit)
    after = valid & (np.arange(valid.size) >= (i_fit if i_fit is not None else valid.size))
    out["ineq_frac_after_fit"] = float(holds[after].mean()) if after.any() else np.nan
    out["ineq_worst_ratio"] = float(np.max(ratio[after])) if after.any() else np.nan
    out["L_lower"] = float(np.nanmax(sharp)) if np.isfinite(sharp).any() else np.nan
    out["eta_max"] = lam / out["L_lower"] if out["L_lower"] > 0 else np.nan
    if np.isfinite(out["eta_max"]) and eta > out["eta_max"]:
        problems.append(f"η > λ/L (η = {eta:.3g}, λ/L ≤ {out['eta_max']:.3g})")
    elif not np.isfinite(out["L_lower"]):
        problems.append("L unknown (no sharpness recorded)")
    c = float(np.divide(gamma, eta * lam))  # `bounds.contraction_c` of the declared rate; NaN when unknown
    out["c_assumed"] = c
    c_real = realised_c(v, eta, lam, k)
    c_after = c_real[after & np.isfinite(c_real)]
    out["c_realised_max"] = float(c_after.max()) if c_after.size else np.nan
    if c_after.size and out["c_realised_max"] > c * (1 + 1e-6):  # 1e-6: rounding of an exact (1 − cηλ) decay
        problems.append(f"V shrank faster than (1 − cηλ) (c = {out['c_realised_max']:.3g} > {c:.3g})")
    if i_fit is None:
        out["verdict"] = "never fits: no shortcut reached, no window"
        return out
    if not np.isfinite(t_transition):
        out["V_sc"] = float(v[i_fit])
        out["verdict"] = "no transition within the budget: no window" + (f"; {'; '.join(problems)}" if problems else "")
        return out
    i_tr = _index(steps, t_transition)
    v_sc, v_st = float(v[i_fit]), float(v[i_tr])
    s2 = float(np.max(sigma2[i_fit : i_tr + 1]))
    out.update(
        V_sc=v_sc, V_st=v_st, sigma2=s2, V_inf=float(bounds.noise_floor(eta, lam, s2)), delay=t_transition - t_fit
    )
    if not np.isfinite(s2):
        problems.append("σ² unknown")
    elif v_st <= out["V_inf"]:
        problems.append(f"V_st ≤ V_∞ ({v_st:.3g} ≤ {out['V_inf']:.3g}): upper bound void")
    if v_sc <= v_st:
        problems.append("V_sc ≤ V_st: no norm hierarchy")
    t_up, t_up_paper = bounds.escape_time_upper(v_sc, v_st, eta, lam, s2 if np.isfinite(s2) else 0.0)
    t_low, _ = bounds.escape_time_lower(v_sc, v_st, eta, lam, c)
    out.update(
        T_lower=t_fit + float(t_low),
        T_upper=t_fit + float(t_up) if np.isfinite(s2) else np.nan,
        T_upper_paper=t_fit + float(t_up_paper) if np.isfinite(s2) else np.nan,
    )
    if v_sc <= v_st:
        out["position"] = "n/a (no norm hierarchy)"
    elif np.isfinite(out["T_upper"]) and t_transition > out["T_upper"] * (1 + 1e-9) + 1e-9:
        out["position"] = "above T_upper"
    elif t_transition < out["T_lower"] * (1 - 1e-9) - 1e-9:  # a bound may be attained exactly
        out["position"] = "below T_lower"
    elif not contraction.known and np.isfinite(out["T_upper"]):
        out["position"] = "≤ T_upper (no lower bound: γ_eff unknown)"
    elif np.isfinite(out["T_upper"]):
        out["position"] = "inside"
    else:
        out["position"] = "≥ T_lower (no upper bound)"
    if problems:
        out["verdict"] = "violated: " + "; ".join(problems)
    elif out["position"] in ("above T_upper", "below T_lower"):
        out["verdict"] = f"assumptions hold but T_transition is {out['position']}: the bound fails on this run"
    else:
        out["verdict"] = "assumptions hold"
    return out


def check_results(res: Results) -> list[dict]:
    """One row per run: hyperparameters, then `check_run`'s fields (missing ones NaN)."""
    if len(res.steps) < 3:
        raise ConfigError(
            f"'{res.path}' has {len(res.steps)} logged steps; the bound checks need at least 3 (lower train.log_every)"
        )
    _, v = _norm_series(res)
    sigma2, _ = noise_series(res)
    sharp = np.asarray(res.metrics.get("sharpness", np.full(v.shape, np.nan)), np.float64)
    steps = np.asarray(res.steps, np.float64)
    declared = declared_contraction(
        res.config.optim,
        np.asarray(res.hparams["learning_rate"], np.float64),
        np.asarray(res.hparams["weight_decay"], np.float64),
        res.hparams,
    )
    rows = []
    for i in range(res.num_runs):
        srow = res.summary[i] if res.summary else {}
        eta, lam = float(res.hparams["learning_rate"][i]), float(res.hparams["weight_decay"][i])
        row = {"run": i, "weight_decay": lam, "learning_rate": eta, "seed": int(res.hparams["seed"][i])}
        row.update(
            check_run(
                steps,
                v[i],
                sigma2[i],
                sharp[i],
                eta,
                lam,
                res.config.optim.name,
                float(srow.get("T_fit", np.nan)),
                float(srow.get("T_transition", np.nan)),
                res.config.optim.momentum,
                declared.of_run(i, res.num_runs),
            )
        )
        rows.append({c: row.get(c, np.nan) for c in COLUMNS})
    return rows


def layer_summary(res: Results) -> list[dict]:
    """Per layer (the engine's "layer_norm_sq/<name>"): median norm-peak step and median realised rate.

    Proposition 4.2 predicts layer ℓ escapes at γ^(ℓ) = ηλ + f·ηα_ℓκ_ℓ ≥ ηλ, fastest and first for the head
    (largest α). We report, over runs with a resolved fit after the layer's peak, −log r_ℓ/(ηλ) (≥ 1 expected
    only under the theory's rule; α_ℓ, κ_ℓ themselves are not estimated) and the peak order.
    """
    steps = np.asarray(res.steps, np.float64)
    eta = np.asarray(res.hparams["learning_rate"], np.float64)
    lam = np.asarray(res.hparams["weight_decay"], np.float64)
    out = []
    for key in sorted(k for k in res.metrics if k.startswith("layer_norm_sq/")):
        fits = [fit_after_peak(steps, res.metrics[key][i]) for i in range(res.num_runs)]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = [f["rate"] / (eta[i] * lam[i]) if f["status"] == "ok" else np.nan for i, f in enumerate(fits)]
        out.append(
            {
                "layer": key.split("/", 1)[1],
                "peak_step_median": float(np.median([f["peak_step"] for f in fits])),
                "rate_over_eta_lambda": aggregate(ratio),
            }
        )
    return out


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.6g}"
    return str(v)


def _md(v) -> str:
    """A report cell: like `_fmt`, with "–" for a missing value."""
    return _fmt(v) or "–"


def table_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _fmt(v) for k, v in row.items()})
    return buffer.getvalue()


def report_text(res: Results, rows: list[dict]) -> str:
    """The plain-language report printed by `nht paper bound` and written to bound_report.md."""
    name, _ = _norm_series(res)
    _, noise_source = noise_series(res)
    opt = res.config.optim.name
    lines = [
        f"# Bound check: {res.path}",
        "",
        f"optimiser {opt}: {bounds.convention(opt)}",
        f"V = {name} (decay_on = {res.config.optim.decay_on}); σ²: {noise_source}; logged {_log_text(res.steps)}",
        "",
    ]
    lines.append(
        "| run | λ | η | T_fit | T_trans | V_sc | V_st | V_∞ | ineq holds (after fit) | worst ratio | "
        "[T_lower, T_upper] | position | −log r / γ | verdict |"
    )
    lines.append("|" + "---|" * 14)
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['weight_decay']:.3g} | {r['learning_rate']:.3g} | {_md(r['T_fit'])} | "
            f"{_md(r['T_transition'])} | {_md(r['V_sc'])} | {_md(r['V_st'])} | {_md(r['V_inf'])} | "
            f"{_md(r['ineq_frac'])} ({_md(r['ineq_frac_after_fit'])}) | {_md(r['ineq_worst_ratio'])} | "
            f"[{_md(r['T_lower'])}, {_md(r['T_upper'])}] | {_md(r['position'])} | "
            f"{_md(r['amplification'])} | {r['verdict']} |"
        )
    amp = aggregate([r["amplification"] for r in rows])
    lines += [
        "",
        f"realised contraction −log r / −log(1 − γ_eff) over {amp['n']} fitted runs: median "
        f"{_md(amp['median'])}, quartiles [{_md(amp['q25'])}, {_md(amp['q75'])}], range "
        f"[{_md(amp['min'])}, {_md(amp['max'])}]",
    ]
    for lam in sorted({r["weight_decay"] for r in rows}):
        a = aggregate([r["amplification"] for r in rows if r["weight_decay"] == lam])
        lines.append(f"  λ = {lam:.3g}: median {_md(a['median'])} over {a['n']} runs")
    layers = layer_summary(res)
    if layers:
        lines.append("\nlayer-wise (Prop. 4.2 predicts the head peaks and contracts first, at ≥ ηλ):")
        for lay in sorted(layers, key=lambda x: x["peak_step_median"]):
            a = lay["rate_over_eta_lambda"]
            lines.append(
                f"  {lay['layer']}: median norm peak at step {_md(lay['peak_step_median'])}, realised "
                f"−log r/(ηλ) median {_md(a['median'])} over {a['n']} fitted runs"
            )
    applies = sum(r["verdict"] == "assumptions hold" for r in rows)
    lines.append(
        f"\n{applies} of {len(rows)} runs satisfy every assumption; for the others the window is shown "
        f"but the bound is not claimed."
    )
    return "\n".join(lines) + "\n"


def draw(res: Results, rows: list[dict], path: Path, max_runs: int = 12) -> None:
    """Left: V/V_sc against steps after T_fit with the upper/lower bound curves; right: delay against window.
    Written by `nht_jax.figures.style.write_figure` (the figure-output setting: formats, dpi), the explanation
    as the caption under the panels."""
    from matplotlib import cm
    from matplotlib.figure import Figure  # a figure of its own: no pyplot, the process's backend untouched

    from nht_jax.figures.style import caption, write_figure

    _, v = _norm_series(res)
    steps = np.asarray(res.steps, np.float64)
    fig = Figure(figsize=(11, 4.2))
    ax, bx = fig.subplots(1, 2)
    shown = [r for r in rows if np.isfinite(r["V_sc"])][:max_runs]
    lows, highs = [], []
    for j, r in enumerate(shown):
        color = cm.viridis(j / max(len(shown) - 1, 1))
        i, t0 = r["run"], r["T_fit"]
        after = steps >= t0
        t = steps[after] - t0
        ax.semilogy(t, v[i][after] / r["V_sc"], color=color, lw=1.2, label=f"run {i} (λ={r['weight_decay']:.2g})")
        lows.append(np.nanmin(v[i][after]) / r["V_sc"])
        highs.append(np.nanmax(v[i][after]) / r["V_sc"])
        eta, lam = r["learning_rate"], r["weight_decay"]
        s2 = r["sigma2"] if np.isfinite(r["sigma2"]) else 0.0
        ax.semilogy(t, bounds.unrolled_bound(t, r["V_sc"], eta, lam, s2) / r["V_sc"], color=color, ls="--", lw=0.8)
        ax.semilogy(t, (1 - r["c_assumed"] * eta * lam) ** t, color=color, ls=":", lw=0.8)
        if np.isfinite(r["T_transition"]):
            ax.axvline(r["T_transition"] - t0, color=color, lw=0.5, alpha=0.6)
    ax.set_xlabel("steps after $T_\\mathrm{fit}$")
    ax.set_ylabel("$V / V_\\mathrm{sc}$")
    ax.set_title("norm against the Lyapunov bounds")
    if shown:
        ax.set_ylim(max(min(lows), 1e-12) / 10, max(highs) * 2)
        ax.legend(fontsize=7)
    windowed = [r for r in rows if np.isfinite(r["T_lower"]) and not str(r["position"]).startswith("n/a")]
    for j, r in enumerate(windowed):
        lo, hi = r["T_lower"] - r["T_fit"], r["T_upper"] - r["T_fit"]
        ok = r["verdict"] == "assumptions hold"
        bx.plot(
            [j, j],
            [max(lo, 1e-1), hi if np.isfinite(hi) else max(lo, 1e-1) * 1e3],
            color="C0" if ok else "C3",
            lw=14,
            alpha=0.4,
            solid_capstyle="butt",
        )
        bx.plot(j, max(r["delay"], 1e-1), "k_", ms=14, mew=2)
    if not windowed:
        bx.text(0.5, 0.5, "no run has a fit, a transition and V_sc > V_st", ha="center", transform=bx.transAxes)
    bx.set_yscale("log")
    bx.set_xticks(range(len(windowed)), [str(r["run"]) for r in windowed])
    bx.set_xlim(-0.7, max(len(windowed), 1) - 0.3)
    bx.set_xlabel("run")
    bx.set_ylabel("steps after $T_\\mathrm{fit}$")
    bx.set_title("delay against its window")
    fig.tight_layout()
    caption(
        fig,
        "Left: V = ‖θ‖² over V_sc against the steps after T_fit (solid), one colour per run (at most "
        f"{max_runs}), with the unrolled upper bound (dashed) and the lower-bound rate (1 − c·η·λ)^t "
        "(dotted); thin vertical lines: T_transition. Right: each run's delay T_transition − T_fit (black "
        "mark) against its window [T_lower, T_upper] (bar: blue where every assumption holds, red where one "
        "fails).",
    )
    write_figure(fig, path)


def bound_report(path) -> tuple[list[dict], str]:
    """Load a results directory, check every run, write bound_table.csv, bound_report.md and bound.png there,
    holding the folder's lock (`nht_jax.results.lock`) from before the results are read until the last file is
    written: never from results that a running `nht run --overwrite` is replacing.

    Args:
        path: the results folder.

    Returns:
        (the rows of bound_table.csv, the text of bound_report.md).
    """
    if not Path(path).is_dir():  # before the lock, which would create it
        raise ConfigError(f"'{path}' holds no results (no such folder). Run `nht run --out {path}` first.")
    with lock.hold(path, "nht paper bound"):  # busy or read-only: one line saying what to do
        remove_stale_temporaries(path)  # a killed `nht paper bound`'s half-written files
        res = load_results(path)
        check(
            "norm_sq" not in res.not_logged,
            f"'{path}' holds no ‖θ‖² (norm_sq: its logs had none, `nht import` "
            f"kept it as not logged), and the bounds are statements about it; "
            f"import logs that record it to check them",
        )
        rows = check_results(res)
        text = report_text(res, rows)
        atomic_write_text(res.path / "bound_table.csv", table_csv(rows))
        atomic_write_text(res.path / "bound_report.md", text)
        draw(res, rows, res.path / "bound.png")
    return rows, text


__all__ = ["bound_report"]
