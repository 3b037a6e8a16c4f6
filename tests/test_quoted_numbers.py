"""Numbers quoted in docs/findings against the CSVs they come from (issue 44): a quoted number cannot drift from its
source. Each `Quote` names the page, a pattern whose groups are the quoted numbers (in the page's text with its line
breaks as spaces), the CSV committed under docs/findings/data/, the row (every key equal) and the columns, one per
group; a column in `percent` is quoted ×100. A quoted number agrees when it equals the CSV's value rounded to the
decimals it is quoted with (a typographic minus, a leading + and thousands commas read as Python reads the number).
The published scorecard page must hold the table `nht_jax.papers.scorecard.markdown` makes of its CSVs joined, row by
row, their totals and the count of the other rows, each part's time and load (parts.csv), and each number its
text quotes from a row's `ours`;
the digits-grokking held-out κ score (docs/findings/forecast.md) says "met" exactly where `tfit_forecast.GOALS` do."""

import csv
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from nht_jax.analysis.tfit_forecast import GOALS
from nht_jax.papers import scorecard

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "findings" / "data"


class Quote(NamedTuple):
    page: str
    pattern: str
    source: str
    row: dict
    columns: tuple[str, ...]
    percent: tuple[str, ...] = ()


NU = r"([-\d.]+) \[([-\d.]+), ([-\d.]+)\]"
FIVE_SEED = "reproduce-2026-12-06"
LATER = "reproduce-2026-12-06-b"
LATER_PARTS = {"companion-exact-cpu", "digits-grokking", "phase-lambda-eta"}
THIRD = "reproduce-2026-12-06-c"
THIRD_PARTS = {
    "critical-norm-p59",
    "clamp-p59",
    "clamp-p59-t500",
    "clamp-p59-abs",
    "critical-norm",
    "interventions",
    "batch-noise",
    "logit-temperature",
    "norm-clamp",
}
FOURTH = "reproduce-2026-12-06-d"
FOURTH_PARTS = {"border-digits", "default"}
FIFTH = "reproduce-2026-12-06-e"
FIFTH_PARTS = {"critical-norm", "norm-clamp"}
SUPERSEDED = {THIRD: {"norm-clamp"}}
"""Parts whose rows a run no longer gives the page: THIRD's `norm-clamp` trained seed 2 at the `[scale.reproduce]` of
then; FIFTH made it at the five seeds that scale has asked for since 2026-12-06 (commit 6b1683f, before any run)."""
RUNS = (
    (f"{FIVE_SEED}/scorecard.csv", {"default", "toy-linear", "verify-bounds"}),
    (f"{FIVE_SEED}/their-data-scorecard.csv", {"their-data"}),
    (f"{LATER}/scorecard.csv", LATER_PARTS),
    (f"{THIRD}/scorecard.csv", THIRD_PARTS - SUPERSEDED[THIRD]),
    (f"{FOURTH}/scorecard.csv", FOURTH_PARTS),
    (f"{FIFTH}/scorecard.csv", FIFTH_PARTS),
)
"""The runs the scorecard page joins (under docs/findings/data/), each with the parts it made (the page counts the rows
they judge), less those SUPERSEDED."""
RAN = set().union(*(made for _, made in RUNS))


def part_times(folder: str, parts, before: str = "") -> list:
    """The quotes of each part's wall time, CPU time and load at the end in one run's paragraph (`before`: text
    that places them in that paragraph), checked against the run's parts.csv."""
    return [
        Quote(
            SCORECARD,
            rf"{before}`{part}` \([\d,]+ runs × [\d,]+ steps[^)]*\) took ([\d.]+) s of wall time and ([\d.]+) s of CPU, "
            rf"from [\d:]+ UTC \(load [\d.]+ at the start, ([\d.]+) at the end\)",
            f"{folder}/parts.csv",
            {"part": part},
            ("made_s", "cpu_s", "load_1"),
        )
        for part in sorted(parts)
    ]


QUOTES = [
    *[
        Quote(
            "docs/findings/default.md",
            rf"{logs}, threshold {t}, all λ: ν = {NU}",
            f"{FIVE_SEED}/p6_definitions.csv",
            {"logs": logs, "threshold": t, "runs": "all λ"},
            ("nu", "nu_lo", "nu_hi"),
        )
        for logs in ("as logged", "every 50")
        for t in ("0.95", "0.99", "0.999")
    ],
    Quote(
        "docs/findings/default.md",
        rf"every 50, threshold 0.99, λ < 0.8: ν = {NU}",
        f"{FIVE_SEED}/p6_definitions.csv",
        {"logs": "every 50", "threshold": "0.99", "runs": "λ < 0.8"},
        ("nu", "nu_lo", "nu_hi"),
    ),
]


FORECAST = "docs/findings/forecast.md"
DIGITS = "kappa-heldout-digits"
DG = r"Measured, digits-grokking.*?"  # the section's first match of what follows
RULES = (
    ("all", r"pooled median \(`\"all\"`, the default\): κ = ([\d.]+)", ("cal_kappa_median",)),
    (
        "model",
        r"κ\(λ, η\) = e\^a·λ\^b \(`\"model\"`\): κ = ([\d.]+)·λ\^([\d.]+), b \[([\d.]+), ([\d.]+)\]",
        ("model_e_a", "model_b", "model_b_lo", "model_b_hi"),
    ),
    ("level", r"per-level median \(`\"level\"`\)", ()),
)
SCORE = (
    r" \| \**([\d.]+) %\** \[([\d.]+) %, ([\d.]+) %\] \| ([\d.]+) % \| ([\d.]+) \((\d+) of (\d+)\) \| (\d+) of (\d+) \|"
)
SCORE_COLUMNS = ("mape", "mape_lo", "mape_hi", "median_ape", "coverage", "covered", "n_covered_of")
SCORE_COLUMNS += ("n_forecast", "n_positive")
PERCENT = ("mape", "mape_lo", "mape_hi", "median_ape")
LAMBDAS = ("0.2", "0.3", "0.5", "1", "2")
SEEDS = ("13", "14", "15", "16", "17", "18")
SIGNED = r"([−+\d.]+)"
KAPPA_RANGE = r"([\d.]+) \(([\d.]+)–([\d.]+)\)"


def cells(first: str, skip: int, group: str) -> str:
    """A table row of the digits-grokking section from its first cell, `skip` cells passed over, then `group`."""
    return rf"{DG}\| {re.escape(first)} \| (?:[^|]+ \| ){{{skip}}}{group}"


QUOTES += [
    *[
        Quote(FORECAST, DG + label + SCORE, f"{DIGITS}/scores.csv", {"pool": pool}, (*extra, *SCORE_COLUMNS), PERCENT)
        for pool, label, extra in RULES
    ],
    Quote(
        FORECAST,
        rf"{DG}Delays T − T_fit ([\d,]+)–([\d,]+) steps \(([\d.]+)×\)",
        f"{DIGITS}/scores.csv",
        {"pool": "all"},
        ("delay_min", "delay_max", "delay_ratio"),
    ),
    *[
        Quote(
            FORECAST,
            cells(value, k, SIGNED + r" \|"),
            f"{DIGITS}/residuals.csv",
            {"pool": pool, "by": by, "value": value},
            ("mean_r",),
        )
        for by, values in (("lambda", LAMBDAS), ("seed", SEEDS))
        for value in values
        for k, pool in enumerate(("all", "model", "level"))
    ],
    *[
        Quote(
            FORECAST,
            cells(seed, 3, r"(?:\d+ % / ){" + str(k) + r"}(\d+) %"),
            f"{DIGITS}/residuals.csv",
            {"pool": pool, "by": "seed", "value": seed},
            ("mape",),
            ("mape",),
        )
        for seed in SEEDS
        for k, pool in enumerate(("all", "model", "level"))
    ],
    *[
        Quote(
            FORECAST,
            cells(lam, 3, KAPPA_RANGE + r" \|"),
            f"{DIGITS}/residuals.csv",
            {"pool": "all", "by": "lambda", "value": lam},
            ("kappa_law_median", "kappa_law_min", "kappa_law_max"),
        )
        for lam in LAMBDAS
    ],
    *[
        Quote(
            FORECAST,
            cells(lam, 4, KAPPA_RANGE + r" \|"),
            f"{DIGITS}/calibration.csv",
            {"lambda": lam},
            ("kappa_law_median", "kappa_law_min", "kappa_law_max"),
        )
        for lam in LAMBDAS
    ],
    Quote(
        FORECAST,
        rf"{DG}λ 0\.2, seed 14, T = ([\d,]+) against T̂ = ([\d,]+) \(APE ([\d.]+)\), its own law κ ([\d.]+)",
        f"{DIGITS}/runs.csv",
        {"pool": "all", "seed": "14", "lambda": "0.2"},
        ("T", "T_hat", "ape", "kappa_law"),
    ),
]

SCORECARD = "docs/findings/scorecard.md"
NIGHT = r"Later that night \(issue 44\).*?"  # FIFTH's paragraph: its parts were made before, in THIRD's
ETA_SLICES = (("0.079", "λ=0.07937"), ("0.224", "λ=0.223607"), ("0.630", "λ=0.629961"), ("1.77", "λ=1.77477"))
QUOTES += [
    Quote(
        SCORECARD,
        rf"\(`digits.log_ratio`\): slope {NU}, R² ([\d.]+) over (\d+) runs",
        f"{LATER}/digits-grokking-delay_fits.csv",
        {"fit": "collapse", "slice": "all runs"},
        ("slope", "slope_lo", "slope_hi", "r2", "n_runs"),
    ),
    *[
        Quote(
            SCORECARD,
            rf"{NU} \(λ {re.escape(label)}",
            f"{LATER}/phase-lambda-eta-delay_fits.csv",
            {"fit": "power_law_eta", "slice": lam},
            ("nu", "nu_lo", "nu_hi"),
        )
        for label, lam in ETA_SLICES
    ],
    Quote(
        SCORECARD,
        r"\(λ 1\.77, R² ([\d.]+)\)",
        f"{LATER}/phase-lambda-eta-delay_fits.csv",
        {"fit": "power_law_eta", "slice": "λ=1.77477"},
        ("r2",),
    ),
    Quote(
        SCORECARD,
        r"would have failed too, at λ 1\.77 \(R² ([\d.]+)\)",
        f"{LATER}/phase-lambda-eta-delay_fits.csv",
        {"fit": "inverse_eta", "slice": "λ=1.77477"},
        ("r2",),
    ),
    *[
        Quote(
            SCORECARD,
            rf"`{part}` \([\d,]+ runs × [\d,]+ steps[^)]*\) took ([\d.]+) s (?:of wall time )?and ([\d.]+) s of CPU, "
            rf"from [\d:]+ UTC \(load (?:average )?[\d.]+ at the start, ([\d.]+) at the end\)",
            f"{LATER}/parts.csv",
            {"part": part},
            ("made_s", "cpu_s", "load_1"),
        )
        for part in sorted(LATER_PARTS)
    ],
    *part_times(THIRD, THIRD_PARTS),
    *part_times(FOURTH, FOURTH_PARTS),
    *part_times(FIFTH, FIFTH_PARTS, NIGHT),
]

QUOTES += [
    Quote(
        SCORECARD,
        r"at ρ 0\.9 it rises from " + r"\d+ to " * k + r"(\d+)" + r" to \d+" * (1 - k) + r" steps between τ 1\.33",
        f"{THIRD}/logit-temperature-summary.csv",
        {"clamp_rho": "0.9", "temperature": tau},
        ("delay",),
    )
    for k, tau in enumerate(("1.33", "1.67"))
]

COMPANION = f"{LATER}/companion-exact-cpu-summary.csv"
INT = r"(\d+(?:,\d{3})*)"
T_GROK = r"T_grok is the companion's: [\d,]+ at λ 0\.5 \("
T_FIT = r"at a 200-step log, comes at step "
QUOTES += [
    *[
        Quote(SCORECARD, pattern, COMPANION, {"weight_decay": lam, "seed": seed}, (column,))
        for pattern, lam, seed, column in (
            (rf"{T_GROK}{INT} and", "0.5", "0", "T_transition"),
            (rf"{T_GROK}[\d,]+ and {INT};", "0.5", "1", "T_transition"),
            *[(rf"{T_FIT}{INT} and", "0.5", seed, "T_fit") for seed in ("0", "1")],
            *[(rf"{T_FIT}[\d,]+ and {INT}", "1", seed, "T_fit") for seed in ("0", "1")],
        )
    ],
]
ALPHA = r"T_grok ∝ exp\(αρ\) with α "
ALPHA_CI = r"[\d.]+ \[[\d.]+, [\d.]+\],? (?:and )?"  # one α of `clamp.alpha` with its interval, passed over
OURS = (
    ("companion.V_init", r"the initial ‖θ‖² ([\d,]+) \(mean of 4 runs"),
    ("companion.λ=0.5.T_grok", r"T_grok is the companion's: ([\d,]+) at λ 0\.5"),
    ("companion.λ=1.T_grok", r"and ([\d,]+) at λ 1 \(both seeds"),
    ("companion.λ=0.5.V_mem", r"our ‖θ‖² at T_fit: ([\d,]+) at λ 0\.5"),
    ("companion.λ=1.V_mem", r"our ‖θ‖² at T_fit: [\d,]+ at λ 0\.5 and ([\d,]+) at λ 1"),
    ("companion.λ=0.5.V_post", r"ours at T_transition, ([\d,]+) at λ 0\.5"),
    ("companion.λ=1.V_post", r"ours at T_transition, [\d,]+ at λ 0\.5 and ([\d,]+) at λ 1"),
    ("digits.log_ratio", r"\(`digits.log_ratio`\): slope ([\d.]+) \["),
    ("cells.W_c", r"W_c ([\d.]+) against their 50\.21 \(`cells.W_c`\)"),
    ("cells.W_c", r"ours W_c ([\d.]+) is 7 % below"),
    ("cells.free", r"median T_grok ([\d,]+) against 805 \(`cells.free`\)"),
    ("cells.norm_ratio", r"T\(ρ = 1\)/T\(ρ = 0\.85\) ([\d.]+) against 2\.14 \(`cells.norm_ratio`\)"),
    ("cells.t500_rho0.85", r"ρ = 0\.85 groks at ([\d,]+) against 587 \(`cells.t500_rho0.85`"),
    ("cells.abs_rho0.85", r"pinned at their absolute norm, ([\d,]+) too\)"),
    ("cells.abs_rho1.00", r"ρ = 1 at ([\d,]+) against 1,256 and the ratio"),
    ("cells.abs_norm_ratio", r"and the ratio ([\d.]+) against 2\.14 \(`cells.abs_\*`\)"),
    ("cells.t500_rho1.00", r"ρ = 1 groks at ([\d,]+) against their 1,256 \(`cells.t500_rho1.00`"),
    ("cells.t500_rho1.00", r"\(`cells.t500_rho1.00`, ([\d.]+)×\)"),
    ("cells.t500_norm_ratio", r"T\(ρ = 1\)/T\(ρ = 0\.85\) is ([\d.]+) against their 2\.14"),
    ("cells.t500_norm_ratio", r"\(`cells.t500_\*`, both ([\d.]+)×\)"),
    ("cells.t500_clamp_vs_free", r"T\(ρ = 1\)/T\(free\) ([\d.]+) against 1\.56 \(`cells.t500_\*`"),
    ("cells.t500_clamp_vs_free", r"\(`cells.t500_\*`, both ([\d.]+)×\)"),
    ("cells.rho0.85", r"ρ = 0\.85 groks at ([\d,]+) against 587 \([\d.]+×\)"),
    ("cells.rho0.85", r"ρ = 0\.85 groks at [\d,]+ against 587 \(([\d.]+)×\)"),
    ("cells.rho1.00", r"ρ = 1 at ([\d,]+) against 1,256 \([\d.]+×\)"),
    ("cells.rho1.00", r"ρ = 1 at [\d,]+ against 1,256 \(([\d.]+)×\)"),
    ("cells.clamp_vs_free", r"T\(ρ = 1\)/T\(free\) ([\d.]+) against 1\.56 \([\d.]+×\)"),
    ("cells.clamp_vs_free", r"T\(ρ = 1\)/T\(free\) [\d.]+ against 1\.56 \(([\d.]+)×\)"),
    ("noise.flat", r"the median delay moves ([\d.]+)× from B 128 to B 4704"),
    *[("noise.flat", r"not monotone: " + r"\d+(?:,\d{3})*, " * k + INT) for k in range(4)],
    ("noise.arrhenius", r"log delay on B has R² ([\d.]+) over the four batch sizes"),
    ("grokfast.speedup", r"Grokfast's best ([\d.]+)×"),
    ("grokfast.speedup", r"slows the delay, ([\d.]+)× at 5\)"),
    ("ortho_grad.speedup", r"⊥Grad's ([\d.]+)×"),
    ("row_clip.speedup", r"row clipping's ([\d.]+)×"),
    ("clamp.W_c_cv", r"CV ([\d.]+)% of W_c"),
    ("clamp.W_c_cv", r"of W_c = ([\d.]+) over 8 runs"),
    ("injection.shift", r"b·γ_eff ([\d.]+) over 4 runs"),
    ("temperature.collapse", r"`temperature.collapse`, R² ([\d.]+) over 15 runs"),
    *[
        ("clamp.alpha", ALPHA + ALPHA_CI * k + pattern)
        for k in range(3)
        for pattern in (r"([\d.]+)", r"[\d.]+ \[([\d.]+),", r"[\d.]+ \[[\d.]+, ([\d.]+)\]")
    ],
    ("clamp.r2", r"log T_grok on ρ has R² ([\d.]+) \(24 runs\)"),
    ("clamp.r2", r"\(24 runs\), ([\d.]+) and"),
    ("clamp.r2", r"\(24 runs\), [\d.]+ and ([\d.]+) \(25 runs each\)"),
    ("clamp.ranges", r"T_grok's range over ρ ([\d.]+)×"),
    ("clamp.ranges", r"against ([\d.]+)× over η"),
    ("clamp.ranges", r"over η \(ratio ([\d.]+) ≥ 3"),
    ("temperature.slide", r"τ range ([\d.]+)× against the norm's"),
    ("temperature.slide", r"against the norm's ([\d.]+)×\)"),
    ("cifar.P3", r"the intermediate runs ([\d.]+) above the weak runs'"),
    ("cifar.P3", r"above the weak runs' ([\d.]+) and the strong"),
    ("cifar.P3", r"and the strong runs' ([\d.]+) \(`cifar.P3`\)"),
    ("cifar.P6", r"ν = (-[\d.]+) \[-[\d.]+, [\d.]+\] over 24 runs"),
    ("cifar.P6", r"ν = -[\d.]+ \[(-[\d.]+), [\d.]+\] over 24 runs"),
    ("cifar.P6", r"ν = -[\d.]+ \[-[\d.]+, ([\d.]+)\] over 24 runs"),
    ("cifar.P1", r"V_fit > V_post in (9)/24 intermediate runs"),
    ("cifar.P1", r"9/24 intermediate runs, median V_fit/V_post ([\d.]+)\)"),
    *[("cifar.P2", r"P2 \(the regimes order " + r"[^:]+: " + r"[a-z ]+\d+, " * k + r"[a-z ]+ (\d+)") for k in range(3)],
    ("cifar.P4", r"the head first in (1) of the 4 runs"),
    ("cifar.P4", r"logs resolve, (10) more tied"),
    *[("cifar.P5", r"\(S = " + r"[\d.]+\D+" * k + r"([\d.]+)") for k in range(3)],
    ("cifar.S", r"`cifar.S` \(S = ([\d.]+) \["),
    *[
        (
            "S.order",
            r"\(`S.order`\): our S on modular arithmetic above ours on the stand-in, " + r"[\d.]+ − " * k + r"([\d.]+)",
        )
        for k in range(2)
    ],
    ("S.order", r"on the stand-in, [\d.]+ − [\d.]+ = ([\d.]+) > 0"),
)
"""(scorecard row, a pattern of the page whose group is a number of that row's `ours`, as the CSV writes it)."""


def published() -> list[scorecard.Row]:
    """The rows of the scorecard page: the runs of RUNS joined."""
    return scorecard.joined([(scorecard.read_csv(DATA / path), made) for path, made in RUNS])


def page_text(page: str) -> str:
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def source_row(quote: Quote) -> dict:
    with open(DATA / quote.source, newline="", encoding="utf-8") as handle:
        found = [r for r in csv.DictReader(handle) if all(r[k] == v for k, v in quote.row.items())]
    assert len(found) == 1, f"{quote.source}: {len(found)} rows match {quote.row}"
    return found[0]


def agrees(text: str, value: str, scale: float = 1.0) -> bool:
    """`text` (as quoted) is `value` (as the CSV holds it) × `scale` rounded to the decimals `text` has."""
    text = text.replace("−", "-").replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text) == round(float(value) * scale, decimals)


@pytest.mark.parametrize(
    "quote", QUOTES, ids=lambda q: f"{Path(q.page).stem}:{'/'.join(q.row.values())}:{q.columns[0]}"
)
def test_a_quoted_number_is_its_sources(quote):
    match = re.search(quote.pattern, page_text(quote.page))
    assert match, f"{quote.page} no longer quotes {quote.pattern!r}"
    row = source_row(quote)
    assert len(match.groups()) == len(quote.columns)
    for text, column in zip(match.groups(), quote.columns):
        scale = 100.0 if column in quote.percent else 1.0
        assert agrees(text, row[column], scale), (
            f"{quote.page} quotes {column} = {text}; {quote.source} holds {row[column]}"
        )


@pytest.mark.parametrize("row_id, pattern", OURS, ids=[f"{i}:{k}" for k, (i, _) in enumerate(OURS)])
def test_a_number_quoted_from_the_scorecard_is_its_rows(row_id, pattern):
    match = re.search(pattern, page_text(SCORECARD))
    assert match, f"{SCORECARD} no longer quotes {pattern!r}"
    (ours,) = [r.ours for r in published() if r.id == row_id]
    number = rf"(?<![\d.])(?<!\d,){re.escape(match[1])}(?!\d|[.,]\d)"  # the whole number, not a part of one
    assert re.search(number, ours), f"{row_id}: {match[1]} is not in {ours!r}"


def test_the_rounding_rule():
    assert agrees("1.31", "1.3149") and agrees("-0.07", "-0.0712") and agrees("350", "350.0")
    assert not agrees("1.31", "1.316") and not agrees("0.874", "0.87")
    assert agrees("−0.12", "-0.119892") and agrees("+0.04", "0.0444058") and agrees("4,800", "4800")
    assert agrees("13.2", "0.131577", 100.0) and not agrees("13.1", "0.131577", 100.0)


def test_the_digits_goal_column_is_the_goals_verdict():
    """docs/findings/forecast.md's digits-grokking score says "met" for a κ rule exactly where its MAPE is at most
    `GOALS["mape"]` and its coverage at least `GOALS["coverage"]` in scores.csv."""
    text = page_text(FORECAST)
    with open(DATA / DIGITS / "scores.csv", newline="", encoding="utf-8") as handle:
        rows = {r["pool"]: r for r in csv.DictReader(handle)}
    for pool, label, _ in RULES:
        match = re.search(DG + label + r"[^|]*(?: \| [^|]+){4} \| (?P<verdict>met|not met) \|", text)
        assert match, f"{FORECAST} gives no verdict for {pool}"
        r = rows[pool]
        met = float(r["mape"]) <= GOALS["mape"] and float(r["coverage"]) >= GOALS["coverage"]
        assert match["verdict"] == ("met" if met else "not met"), f"{pool}: {match['verdict']} against {r}"


def test_the_published_scorecard_is_its_csv_row_by_row():
    rows = published()
    page = (ROOT / "docs" / "findings" / "scorecard.md").read_text(encoding="utf-8")
    assert rows and scorecard.markdown(rows) in page
    judged = [r for r in rows if r.parts and set(r.parts.split(", ")) <= RAN]
    text = " ".join(page.split())
    assert f"**{scorecard.tally_text(judged)}** over the {len(judged)} rows" in text
    assert f"the other {len(rows) - len(judged)} rows are `[--]`" in text
