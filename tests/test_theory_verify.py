"""`nht verify-bounds` end to end: every claim holds on the toy models, and a failing claim is reported."""

from nht_jax.cli import main
from nht_jax.theory.verify import Claim, check_amplification, check_escape_window


def test_verify_bounds_command_reports_every_claim_ok(capsys):
    assert main(["verify-bounds", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "[!!]" not in out and out.count("[OK]") >= 18 and "tolerance" in out


def test_failed_claims_are_marked():
    assert Claim("x", False, "m", "t").line().startswith("[!!]")
    assert not check_amplification([1.0, 1.2], 1.0, 1e-6, "(a)").ok
    assert not check_escape_window([10.0], [20.0], [40.0], "(a)").ok  # below the lower bound
    assert not check_escape_window([50.0], [20.0], [40.0], "(a)").ok  # above the upper bound
    assert not check_escape_window([25.0], [20.0], [40.0], "(a)", tight_lower=True).ok
