"""P1–P6 verdicts on planted inputs: each rule can come out ✓, ✗ and n.a."""

from types import SimpleNamespace

import numpy as np

from nht_jax.analysis import predictions as P
from nht_jax.analysis.fits import LineFit, table_from_arrays
from nht_jax.analysis.series import Pooled

OPTIONS = P.PredictionOptions()


def rows_for(regimes, lams, finals=None, acc=None):
    finals = finals if finals is not None else [1.0] * len(regimes)
    acc = acc if acc is not None else [0.5] * len(regimes)
    return [
        {"regime": r, "weight_decay": l, "norm_final": f, "final_test_acc": a}
        for r, l, f, a in zip(regimes, lams, finals, acc)
    ]


def test_norm_ordering_counts_intermediate_runs_only():
    regimes = ["intermediate"] * 4 + ["weak"]
    table = table_from_arrays(
        {"weight_decay": [0.1] * 5}, regimes, [0] * 5, [10] * 5, v_fit=[10, 10, 10, 1, 100], v_post=[1, 1, 1, 10, 1]
    )
    rows = rows_for(regimes, [0.1] * 5)
    assert P.norm_ordering(table, rows, OPTIONS).verdict == P.OK  # 3/4 = 75 %
    assert P.norm_ordering(table, rows, P.PredictionOptions(norm_order_share=0.8)).verdict == P.FAIL
    none = table_from_arrays({"weight_decay": [0.1]}, ["weak"], [0], [np.nan], v_fit=[1], v_post=[np.nan])
    assert P.norm_ordering(none, rows_for(["weak"], [0.1]), OPTIONS).verdict == P.NA


def test_three_regimes_need_all_three_in_lambda_order():
    ordered = rows_for(["weak", "weak", "intermediate", "structured", "strong"], [1e-3, 1e-2, 0.1, 0.3, 3])
    assert P.three_regimes(ordered, []).verdict == P.OK
    reversed_ = rows_for(["strong", "intermediate", "weak"], [1e-3, 0.1, 3])
    assert P.three_regimes(reversed_, []).verdict == P.FAIL
    two = rows_for(["weak", "intermediate", "intermediate"], [1e-3, 0.1, 1.0])
    assert P.three_regimes(two, []).verdict == P.FAIL
    assert P.three_regimes(rows_for(["weak", "strong"], [1e-3, 3]), []).verdict == P.NA  # two λ cannot show three


def test_robustness_ordering_wants_the_intermediate_regime_best():
    regimes = ["weak", "intermediate", "intermediate", "strong"]
    best = rows_for(regimes, [1e-3, 0.1, 0.1, 3], acc=[0.3, 0.9, 0.95, 0.1])
    assert P.robustness_ordering(best, "test_acc", OPTIONS).verdict == P.OK
    monotone = rows_for(regimes, [1e-3, 0.1, 0.1, 3], acc=[0.99, 0.9, 0.95, 0.1])  # the paper's own CIFAR numbers
    assert P.robustness_ordering(monotone, "test_acc", OPTIONS).verdict == P.FAIL
    assert P.robustness_ordering(best, None, OPTIONS).verdict == P.NA
    assert P.robustness_ordering(rows_for(["intermediate"], [0.1]), "test_acc", OPTIONS).verdict == P.NA


def test_layer_hierarchy_and_separation_read_the_pooled_numbers():
    def layers(n_first, n_det, margin):
        pooled = SimpleNamespace(
            n=n_det + 1,
            n_determined=n_det,
            n_head_first=n_first,
            n_tied=1,
            fraction_head_first=n_first / n_det if n_det else np.nan,
            peak_margin=Pooled(n_det, margin, margin, margin),
        )
        return SimpleNamespace(pooled=pooled, pool_note="")

    assert P.layer_hierarchy(layers(3, 4, 400.0), OPTIONS).verdict == P.OK
    assert "1 more tied at log resolution" in P.layer_hierarchy(layers(3, 4, 400.0), OPTIONS).number
    assert P.layer_hierarchy(layers(3, 4, -400.0), OPTIONS).verdict == P.FAIL
    assert P.layer_hierarchy(layers(2, 4, 400.0), OPTIONS).verdict == P.FAIL  # not more than half
    assert P.layer_hierarchy(layers(0, 0, np.nan), OPTIONS).verdict == P.NA
    score = lambda s: SimpleNamespace(pooled=Pooled(5, s, s, s))  # noqa: E731
    assert P.clean_separation(score(0.9), OPTIONS).verdict == P.OK
    assert P.clean_separation(score(-0.11), OPTIONS).verdict == P.FAIL
    assert P.clean_separation(score(np.nan), OPTIONS).verdict == P.NA


def test_delay_scaling_wants_nu_near_one_in_every_slice():
    def fit(nu, r2, status="ok"):
        return LineFit(
            "power_law_lambda",
            "log λ",
            "log delay",
            (),
            status,
            slope=-nu,
            r2=r2,
            slope_ci=(-nu - 0.1, -nu + 0.1),
            runs=(0, 1, 2),
        )

    assert P.delay_scaling([fit(1.1, 0.95)], OPTIONS).verdict == P.OK
    assert P.delay_scaling([fit(1.1, 0.95), fit(0.5, 0.99)], OPTIONS).verdict == P.FAIL
    assert P.delay_scaling([fit(1.0, 0.5)], OPTIONS).verdict == P.FAIL
    assert P.delay_scaling([fit(np.nan, np.nan, "not enough data: 1 usable run(s), need 3")], OPTIONS).verdict == P.NA


def test_the_final_norm_median_of_a_lambda_where_every_run_diverged_is_nan_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(P.median_or_nan(np.array([np.nan, np.nan])))
    assert P.median_or_nan(np.array([np.nan, 3.0, 1.0, np.inf])) == np.nanmedian([np.nan, 3.0, 1.0, np.inf])
