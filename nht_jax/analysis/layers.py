"""Layer order of the transition (docs/science.md §2 Proposition 4.2, §3 P4, §5): does the head peak and contract first?

Per run, on the squared norms of each top-level layer the engine records ("layer_norm_sq/<layer>"): each layer's
first contracting peak and its contraction step, the head / first-layer ratio, the margins by which the head
peaks and contracts before the first layer, and a verdict ("head first", "first layer first", "not head first",
"tied at log resolution", "undetermined"). Pooled over the runs of `regimes`: the share "head first" and the
median margins with bootstrap intervals. `nht analyze` writes layer_order.csv from it.

The definitions, the verdict's rules and the pooling: docs/methods/analysis.md, "Layer order"; the report's
reading: docs/guides/analyse.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from nht_jax.analysis.series import Pooled, bootstrap_median, finite_run, pool_mask, run_info
from nht_jax.measure.forecast.window import first_peak
from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import Tabular, fmt
from nht_jax.results.folder import Results

FIRST_LAYER_NAMES = ("embed", "tok_embed", "embedding", "hidden_0", "conv1", "conv_0", "stem_conv")
"""Names of the input-side layer, tried in order when the model settings name none."""

PREFIX = "layer_norm_sq/"


@dataclass(frozen=True)
class LayerOptions(BootstrapOptions):
    """Options of the layer-order analysis (module docstring: the definitions).

    head_layer: the classifier layer ("head").
    first_layer: the input-side layer; "" = auto (the model's `first_layer`, else `FIRST_LAYER_NAMES`).
    contraction_fraction: f, a layer has contracted once its norm is ≤ (1 − f) × its peak.
    verdict_on: "both" (peaks and contracts first), "peak" or "contraction".
    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the pooled fraction
        and medians with bootstrap intervals.
    """

    n_bootstrap: int = 2000  # BootstrapOptions' field, this analysis's default
    head_layer: str = "head"
    first_layer: str = ""
    contraction_fraction: float = 0.1
    verdict_on: Literal["both", "peak", "contraction"] = "both"


class LayerTimes(NamedTuple):
    peak_step: float
    peak: float
    contract_step: float  # NaN: never contracts by the fraction within the budget
    still_rising: bool  # the peak is at the last log


class LayerOrderRun(NamedTuple):
    """One run's layer order. `reason` explains the verdict."""

    verdict: str  # "head first" | "not head first" | "undetermined"
    head_peak_step: float
    first_peak_step: float
    peak_margin: float  # first − head, steps
    head_contract_step: float
    first_contract_step: float
    contract_margin: float  # first − head, steps
    ratio_init: float  # V_head / V_first at the first log
    ratio_peak: float  # at the head's peak
    ratio_final: float  # at the last log
    resolution: float  # steps between logs around the head's peak: the order's resolution there
    tied: str  # the criteria that tie at log resolution ("peak", "contraction", both, or "")
    reason: str


NAN_ORDER = LayerOrderRun("undetermined", *([np.nan] * 10), "", "")

DETERMINED = ("head first", "first layer first", "not head first")
"""The verdicts that order the two layers (module docstring)."""


class LayerPooled(NamedTuple):
    n: int  # runs pooled
    n_determined: int
    n_head_first: int
    fraction_head_first: float
    peak_margin: Pooled
    contract_margin: Pooled
    n_first_layer_first: int = 0
    n_tied: int = 0  # runs tied at log resolution (not determined)


@dataclass(frozen=True)
class LayerReport(Tabular):
    """The layer order of every run (one row per run, `Tabular`) and the pooled verdict."""

    head_layer: str
    first_layer: str
    first_layer_rule: str
    runs: tuple[LayerOrderRun, ...]
    info: tuple[dict, ...]
    pooled: LayerPooled
    pool_note: str
    options: LayerOptions = field(default_factory=LayerOptions)

    def markdown(self) -> str:
        p = self.pooled
        pm, cm = p.peak_margin, p.contract_margin
        head = (
            f"Layer order (nht_jax.analysis.layers): head = '{self.head_layer}', first layer = "
            f"'{self.first_layer}' ({self.first_layer_rule}); contraction = "
            f"{self.options.contraction_fraction:.0%} below the layer's peak; verdict on "
            f"{self.options.verdict_on}.\n\n"
            f"Head first in {p.n_head_first} of {p.n_determined} determined runs "
            f"({fmt(p.fraction_head_first)}; first layer first in {p.n_first_layer_first}; "
            f"{p.n_tied} more tied at log resolution, not counted; {p.n} runs, {self.pool_note}). Median peak margin "
            f"{fmt(pm.median)} steps [{fmt(pm.lo)}, {fmt(pm.hi)}] (n = {pm.n}); median contraction margin "
            f"{fmt(cm.median)} [{fmt(cm.lo)}, {fmt(cm.hi)}] (n = {cm.n}); "
            f"{self.options.confidence:.0%} bootstrap intervals.\n\n"
        )
        return head + self.table()


# ----------------------------------------------------------------------------- the core on arrays


def normalised_to_peak(norm) -> np.ndarray:
    """V_t / max_t V_t (finite logs)."""
    norm = np.asarray(norm, np.float64)
    return norm / np.nanmax(np.where(np.isfinite(norm), norm, np.nan))


def head_first_ratio(head, first) -> np.ndarray:
    """V^(head)_t / V^(first)_t."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(head, np.float64) / np.asarray(first, np.float64)


def layer_times(steps, norm, fraction: float = 0.1) -> LayerTimes:
    """Peak step, peak value and contraction step of one layer's (logs,) squared norm (all finite)."""
    steps, norm = np.asarray(steps, np.float64), np.asarray(norm, np.float64)
    p, c = first_peak(norm, fraction)
    return LayerTimes(float(steps[p]), float(norm[p]), float(steps[c]) if c >= 0 else np.nan, p == norm.size - 1)


def log_resolution(steps, index: int) -> float:
    """The larger of the two log intervals around log `index`: how finely a peak there is placed."""
    steps = np.asarray(steps, np.float64)
    gaps = np.diff(steps)
    around = gaps[max(index - 1, 0) : index + 1]
    return float(around.max()) if around.size else np.nan


def _never(t: float) -> str:
    return "never" if np.isnan(t) else f"{t:.0f}"


def _order(head_t: float, first_t: float) -> int:
    """+1 head earlier, −1 first layer earlier, 0 tie; NaN = never (later than any step)."""
    h, f = (np.inf if np.isnan(head_t) else head_t), (np.inf if np.isnan(first_t) else first_t)
    return int(np.sign(f - h))


def layer_order(steps, head, first, options: LayerOptions = LayerOptions()) -> LayerOrderRun:
    """The layer order of one run.

    Args:
        steps: the logged steps, (logs,).
        head: the head's squared norm at each log.
        first: the first layer's squared norm at each log.
        options: the layer options.

    Returns:
        The LayerOrderRun.
    """
    steps = np.asarray(steps, np.float64)
    head, first = np.asarray(head, np.float64), np.asarray(first, np.float64)
    if not (np.isfinite(head).all() and np.isfinite(first).all()):
        return NAN_ORDER._replace(reason="diverged: a layer norm is not finite at some log")
    h = layer_times(steps, head, options.contraction_fraction)
    f = layer_times(steps, first, options.contraction_fraction)
    ratio = head_first_ratio(head, first)
    hp = int(np.argmax(head))
    resolution = log_resolution(steps, int(np.searchsorted(steps, h.peak_step)))
    out = LayerOrderRun(
        "undetermined",
        h.peak_step,
        f.peak_step,
        f.peak_step - h.peak_step,
        h.contract_step,
        f.contract_step,
        f.contract_step - h.contract_step,
        float(ratio[0]),
        float(ratio[hp]),
        float(ratio[-1]),
        resolution,
        "",
        "",
    )
    pct = f"{options.contraction_fraction:.0%}"
    if options.verdict_on != "peak" and np.isnan(h.contract_step) and np.isnan(f.contract_step):
        return out._replace(reason=f"neither layer's norm falls {pct} below its peak within the budget")
    if options.verdict_on == "peak" and h.still_rising and f.still_rising:
        return out._replace(reason="both layers' norms still rising at the last log")
    peak, contract = _order(h.peak_step, f.peak_step), _order(h.contract_step, f.contract_step)
    censored = " (first layer still rising at the end: margin is a lower bound)" if f.still_rising else ""
    words = {1: "earlier", -1: "later", 0: "at the same log (tied at log resolution)"}
    peak_text = f"head peaks {words[peak]} ({h.peak_step:.0f} vs {f.peak_step:.0f}){censored}"
    contract_text = f"head contracts {pct} {words[contract]} ({_never(h.contract_step)} vs {_never(f.contract_step)})"
    criteria = {
        "both": {"peak": peak, "contraction": contract},
        "peak": {"peak": peak},
        "contraction": {"contraction": contract},
    }[options.verdict_on]
    texts = {"both": f"{peak_text}; {contract_text}", "peak": peak_text, "contraction": contract_text}
    text, used = texts[options.verdict_on], set(criteria.values())
    tied = ", ".join(name for name, order in criteria.items() if order == 0)
    if used == {0}:
        verdict = "tied at log resolution"
        text = (
            f"logs {resolution:.0f} steps apart at the head's peak are too coarse to order the layers, not "
            f"evidence either way: {text}"
        )
    elif -1 in used and 1 in used:
        verdict = "not head first"
    else:
        verdict = "first layer first" if -1 in used else "head first"
    return out._replace(verdict=verdict, reason=text, tied=tied)


# ----------------------------------------------------------------------------- entry point


def resolve_layers(res: Results, options: LayerOptions = LayerOptions()) -> tuple[str, str, str]:
    """(head layer, first layer, how the first layer was chosen); a missing layer is returned as named and
    every run of the report says it is missing."""
    recorded = [k[len(PREFIX) :] for k in res.metrics if k.startswith(PREFIX)]
    if options.first_layer:
        return options.head_layer, options.first_layer, "set in the options"
    declared = getattr(res.config.model, "first_layer", None)
    if declared and declared in recorded:
        return options.head_layer, declared, f"model {res.config.model.name}'s first_layer"
    for name in FIRST_LAYER_NAMES:
        if name in recorded:
            return options.head_layer, name, "first recorded of " + ", ".join(FIRST_LAYER_NAMES)
    return options.head_layer, "", f"none of {', '.join(FIRST_LAYER_NAMES)} recorded (layers: {', '.join(recorded)})"


def layer_curves(res: Results, run: int, options: LayerOptions = LayerOptions()) -> dict[str, np.ndarray]:
    """Time series of one run for a figure: "steps", each recorded layer normalised to its peak (by layer name),
    and "ratio" = head / first layer."""
    head_name, first_name, _ = resolve_layers(res, options)
    out = {"steps": np.asarray(res.steps, np.float64)}
    for key in res.metrics:
        if key.startswith(PREFIX):
            out[key[len(PREFIX) :]] = normalised_to_peak(res.metrics[key][run])
    if f"{PREFIX}{head_name}" in res.metrics and f"{PREFIX}{first_name}" in res.metrics:
        out["ratio"] = head_first_ratio(
            res.metrics[f"{PREFIX}{head_name}"][run], res.metrics[f"{PREFIX}{first_name}"][run]
        )
    return out


def pool_layer_order(runs, mask, options: LayerOptions = LayerOptions()) -> LayerPooled:
    """Pooled verdicts and margins over the runs where mask is True."""
    chosen = [r for r, keep in zip(runs, mask) if keep]
    determined = [r for r in chosen if r.verdict in DETERMINED]
    n_first = sum(r.verdict == "head first" for r in determined)

    def boot(xs):
        return bootstrap_median(xs, options.confidence, options.n_bootstrap, options.seed)

    return LayerPooled(
        len(chosen),
        len(determined),
        n_first,
        n_first / len(determined) if determined else np.nan,
        boot([r.peak_margin for r in determined]),
        boot([r.contract_margin for r in determined]),
        sum(r.verdict == "first layer first" for r in determined),
        sum(r.verdict == "tied at log resolution" for r in chosen),
    )


def layer_report(res: Results, options: LayerOptions = LayerOptions()) -> LayerReport:
    """The layer order of every run of a loaded results directory, and the pooled verdict."""
    head_name, first_name, rule = resolve_layers(res, options)
    missing = [n or "(first layer)" for n in (head_name, first_name) if f"{PREFIX}{n}" not in res.metrics]
    runs, infos = [], []
    for i in range(res.num_runs):
        infos.append(run_info(res, i))
        finite = finite_run(res, i)
        if missing:
            runs.append(NAN_ORDER._replace(reason=f"layer(s) {', '.join(missing)} not recorded ({rule})"))
        elif not finite.all():
            runs.append(NAN_ORDER._replace(reason=f"diverged at step {res.steps[np.argmin(finite)]:.0f}"))
        else:
            runs.append(
                layer_order(
                    res.steps, res.metrics[f"{PREFIX}{head_name}"][i], res.metrics[f"{PREFIX}{first_name}"][i], options
                )
            )
    mask, note = pool_mask(res, options.regimes)
    return LayerReport(
        head_name, first_name, rule, tuple(runs), tuple(infos), pool_layer_order(runs, mask, options), note, options
    )


ANALYSIS = Analysis(
    name="layers",
    options=LayerOptions,
    run=lambda results, options, needed: layer_report(results, options),
    tables=lambda report: {"layer_order.csv": report.csv()},
    markdown=lambda report: "\n## Layer order\n\n" + report.markdown(),
)
"""`nht analyze`'s record of the layer order (nht_jax.analysis.registry)."""


__all__ = ["ANALYSIS", "layer_order"]
