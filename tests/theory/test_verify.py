"""`nht verify-bounds`: exactly 20 claims, all hold on the toy models (quick path), and every claim of every
`check_*` function comes out not ok on an input built to violate it."""

import contextlib
import io

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.theory import verify
from nht_jax.theory.verify import Claim

NUM_CLAIMS = {"(a)": 8, "(b)": 6, "(c)": 6}  # linear_zero_noise, diagonal_network, linear_noisy


@pytest.fixture(scope="module")
def quick_verify():
    """`nht verify-bounds --quick` once for the module: (exit code, printed text, the Claims run_all returned)."""
    calls = []
    original = verify.run_all

    def spy(quick=False):
        claims = original(quick)
        calls.append((quick, claims))
        return claims

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(verify, "run_all", spy)
        code = main(["paper", "verify-bounds", "--quick"])
    assert len(calls) == 1 and calls[0][0] is True, "the CLI's --quick must reach run_all(quick=True)"
    return code, out.getvalue(), calls[0][1]


def test_verify_bounds_quick_reports_exactly_twenty_claims_all_ok(quick_verify):
    code, text, claims = quick_verify
    failed = [c.line() for c in claims if not c.ok]
    assert failed == [] and code == 0
    assert len(claims) == 20 and sum(NUM_CLAIMS.values()) == 20
    assert len({c.text for c in claims}) == 20  # no claim counted twice
    assert {p: sum(c.text.startswith(p) for c in claims) for p in NUM_CLAIMS} == NUM_CLAIMS
    lines = text.splitlines()
    assert sum(line.startswith("[OK] ") for line in lines) == 20
    assert not any(line.startswith("[!!]") for line in lines)
    assert [line for line in lines if line.startswith("[")] == [c.line() for c in claims]
    assert any(line.startswith("20/20 claims hold (") for line in lines)


def test_a_failing_claim_makes_the_command_fail(monkeypatch, capsys):
    claims = [Claim("(a) fine", True, "m", "t"), Claim("(b) broken", False, "m2", "t2")]
    monkeypatch.setattr(verify, "run_all", lambda quick=False: claims)
    assert main(["paper", "verify-bounds", "--quick"]) == 1
    out = capsys.readouterr().out
    assert "[OK] (a) fine: m (tolerance t)" in out and "[!!] (b) broken: m2 (tolerance t2)" in out
    assert "1/2 claims hold" in out


def test_claim_lines():
    assert Claim("x", True, "m", "t").line() == "[OK] x: m (tolerance t)"
    assert Claim("x", False, "m", "t").line() == "[!!] x: m (tolerance t)"


def test_lyapunov_holds_by_hand():
    eta, lam = np.array([0.1]), np.array([0.5])  # one-step factor 1 − ηλ = 0.95
    assert verify.lyapunov_holds(np.array([[1.0, 0.95, 0.9025]]), eta, lam).all()  # equality is allowed
    assert not verify.lyapunov_holds(np.array([[1.0, 0.95, 0.91]]), eta, lam).any()
    # with noise the bound is 0.95 V + η²σ² = 0.95 + 0.01·2
    assert verify.lyapunov_holds(np.array([[1.0, 0.97]]), eta, lam, sigma2=2.0).all()
    assert not verify.lyapunov_holds(np.array([[1.0, 0.971]]), eta, lam, sigma2=2.0).any()
    assert verify.lyapunov_holds(np.array([[0.0, 1e-30]]), eta, lam, atol=1e-29).all()  # the rounding floor
    assert verify.rounding_floor([4.0, 2.0]) == pytest.approx(4e3 * np.finfo(np.float64).eps ** 2)


# ----------------------------------------------------------------------------- every claim can fail


def _balance(eta, lam, runs=2, steps=6, d=3):
    """Δ_{t+1} = ((1 − 2ηλ)² − η²r_t²)Δ_t iterated by hand from random r_t and Δ_0."""
    rng = np.random.default_rng(0)
    r = rng.normal(size=(runs, steps + 1, d))
    delta = np.empty_like(r)
    delta[:, 0] = rng.uniform(1.0, 2.0, size=(runs, d))
    for t in range(steps):
        delta[:, t + 1] = ((1 - 2 * eta[:, None] * lam[:, None]) ** 2 - eta[:, None] ** 2 * r[:, t] ** 2) * delta[:, t]
    return delta, r


ETA2, LAM2 = np.array([0.1, 0.05]), np.array([0.02, 0.05])
DELTA, R = _balance(ETA2, LAM2)
DELTA_OFF = DELTA.copy()
DELTA_OFF[1, 4, 2] *= 1 + 1e-9

# diagonal network time scale: T = log(α²/Δ_c)/(−2 log(1 − 2ηλ)), one Δ_c for every (η, λ, α)
TS_ETA, TS_LAM = np.repeat([0.04, 0.02], 3), np.repeat([0.01, 0.01], 3)
TS_ALPHA = np.tile([2.0, 3.0, 4.0], 2)
TS_RATE = -2 * np.log(1 - 2 * TS_ETA * TS_LAM)
TS_GOOD = np.log(TS_ALPHA**2 / 0.5) / TS_RATE
TS_SLOPE = (1.05 * np.log(TS_ALPHA**2) - np.log(0.5)) / TS_RATE  # slope 1.05, spread 0.05·log 4 < 0.1
TS_SPREAD = np.log(TS_ALPHA**2 / np.repeat([0.5, 1.0], 3)) / TS_RATE  # slope 1, two Δ_c (spread log 2)

# (function, good arguments, {case: (bad arguments, index of the claim that must fail)})
CASES = {
    "check_trajectories": (
        (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
        {"off by 5e-9": ((np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-8])), 0)},
    ),
    "check_transition_times": (
        (np.array([10.5, 20.25]), np.array([10.5, 20.25]), np.array([11, 21]), np.array([11, 21])),
        {
            "continuous time off": (
                (np.array([10.5, 20.25]), np.array([10.5, 20.26]), np.array([11, 21]), np.array([11, 21])),
                0,
            ),
            "integer step off": (
                (np.array([10.5, 20.25]), np.array([10.5, 20.25]), np.array([11, 21]), np.array([11, 22])),
                0,
            ),
        },
    ),
    "check_escape_window": (
        ([20.0, 30.0], [20.0, 20.0], [40.0, 40.0], "(a)"),
        {"below T_lower": (([10.0], [20.0], [40.0], "(a)"), 0), "above T_upper": (([50.0], [20.0], [40.0], "(a)"), 0)},
    ),
    "check_amplification": (
        ([1.0, 1.0 + 5e-7], 1.0, 1e-6, "(a)"),
        {
            "off target": (([1.0, 1.2], 1.0, 1e-6, "(a)"), 0),
            "unfitted run (NaN)": (([1.0, np.nan], 1.0, 1e-6, "(a)"), 0),
        },
    ),
    "check_balance_identity": (
        (DELTA, R, ETA2, LAM2),
        {"decoupled rate": ((DELTA, R, ETA2, LAM2 / 2), 0), "one entry off by 1e-9": ((DELTA_OFF, R, ETA2, LAM2), 0)},
    ),
    "check_time_scale": (
        (TS_GOOD, TS_ETA, TS_LAM, TS_ALPHA),
        {
            "slope 1.05": ((TS_SLOPE, TS_ETA, TS_LAM, TS_ALPHA), 0),
            "two Δ_c": ((TS_SPREAD, TS_ETA, TS_LAM, TS_ALPHA), 1),
        },
    ),
    "check_kernel_first": (
        ([0.5, 0.45], 0.5, [10.0, 12.0], [3.0, 4.0]),
        {
            "sparse already at T_fit": (([0.5, 0.3], 0.5, [10.0, 12.0], [3.0, 4.0]), 0),
            "norm not above its final value": (([0.5, 0.45], 0.5, [10.0, 4.0], [3.0, 4.0]), 0),
        },
    ),
    "check_mean_trajectory": (
        (np.array([1.0, 2.0]), np.array([0.1, 0.1]), np.array([1.2, 1.6]), "(c)"),
        {"6 SE off": ((np.array([1.0, 2.0]), np.array([0.1, 0.1]), np.array([1.0, 2.6]), "(c)"), 0)},
    ),
    "check_noise_floor": (
        ([0.2, 0.3], [1.0, 1.0], [0.21, 0.28], [0.01, 0.01]),
        {
            "floor above V_∞": (([0.2, 1.3], [1.0, 1.0], [0.21, 1.28], [0.01, 0.01]), 0),
            "measured floor 6 SE off": (([0.2, 0.3], [1.0, 1.0], [0.21, 0.36], [0.01, 0.01]), 1),
        },
    ),
    "check_unrolled_bound": (
        (np.array([1.0, 1.5]), np.array([0.1, 0.1]), np.array([1.0, 1.2]), "(c)"),
        {"mean 6 SE above the bound": ((np.array([1.0, 1.5]), np.array([0.1, 0.1]), np.array([1.0, 0.9]), "(c)"), 0)},
    ),
    "check_violation_reported": (
        (float("nan"), 1.0, 2.0, True),
        {"a number where the bound is void": ((123.0, 1.0, 2.0, True), 0)},
    ),
    "check_violation_detected": (
        (np.array([False, False]),),
        {"one violating run passes": ((np.array([False, True]),), 0)},
    ),
    "check_lyapunov_exact": (
        (np.array([True, True, False]), np.array([True, True, False]), np.array([True, False, False])),
        {
            "holds where not predicted": (
                (np.array([True, True, True]), np.array([True, True, False]), np.array([True, False, False])),
                0,
            ),
            "fails where predicted": (
                (np.array([True, False, False]), np.array([True, True, False]), np.array([True, False, False])),
                0,
            ),
            "fails although η ≤ λ/L": ((np.array([True, False]), np.array([True, False]), np.array([False, True])), 1),
        },
    ),
    "check_literal_failure": (
        (np.array([12, 40]), np.array([12, 40])),
        {"one step late": ((np.array([12, 41]), np.array([12, 40])), 0)},
    ),
}


def _claims(result):
    return result if isinstance(result, list) else [result]


def test_every_check_function_has_a_failing_case():
    defined = [n for n, f in vars(verify).items() if n.startswith("check_") and callable(f)]
    assert sorted(CASES) == sorted(defined)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_passes_on_consistent_input(name):
    good, _ = CASES[name]
    claims = _claims(getattr(verify, name)(*good))
    assert claims and all(c.ok for c in claims), [c.line() for c in claims]


@pytest.mark.parametrize("name, case", [(n, c) for n in sorted(CASES) for c in CASES[n][1]])
def test_check_fails_on_a_violating_input(name, case):
    bad, index = CASES[name][1][case]
    claims = _claims(getattr(verify, name)(*bad))
    assert not claims[index].ok, claims[index].line()
    assert claims[index].line().startswith("[!!] ")
    others = [c for i, c in enumerate(claims) if i != index]
    assert all(c.ok for c in others), [c.line() for c in others]  # the violation is pinned on its own claim


def test_every_claim_of_every_check_has_a_failing_case():
    """A list-returning check needs a failing case per claim."""
    for name, (good, bad) in CASES.items():
        n = len(_claims(getattr(verify, name)(*good)))
        assert {index for _, index in bad.values()} == set(range(n)), name


def test_tight_lower_bound_must_be_attained():
    assert verify.check_escape_window([20.0], [20.0], [40.0], "(a)", tight_lower=True).ok
    assert not verify.check_escape_window([25.0], [20.0], [40.0], "(a)", tight_lower=True).ok
