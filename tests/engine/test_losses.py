"""The classification losses on hand-computed logits (float64 references), StableMax's s(x) and its gradient,
the loss names, and the temperature's helpers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.engine import losses
from nht_jax.engine.metrics import logit_scale, loss_and_accuracy

LOGITS = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 2.0], [2.0, 0.0, -1.0]])
LABELS = np.array([0, 1, 2])


def as_f32(*arrays):
    return tuple(jnp.asarray(a, jnp.float32) if a.dtype.kind == "f" else jnp.asarray(a, jnp.int32) for a in arrays)


def weighted(per_example, weights):
    return float(np.sum(per_example * weights) / max(np.sum(weights), 1.0))


def reference_cross_entropy(z, y):
    z = z.astype(np.float64)
    return np.log(np.sum(np.exp(z), axis=-1)) - z[np.arange(len(y)), y]


def reference_mse(z, y):
    """PyTorch's F.mse_loss(z, one_hot(y)) per example: the mean over classes of the squared error."""
    return np.mean((z.astype(np.float64) - np.eye(z.shape[1])[y]) ** 2, axis=-1)


def reference_s(x):
    x = np.asarray(x, np.float64)
    return np.where(x >= 0, x + 1.0, 1.0 / (1.0 - np.minimum(x, 0.0)))


def reference_stablemax(z, y):
    s = reference_s(z)
    return -np.log(s[np.arange(len(y)), y] / s.sum(axis=-1))


def test_the_hand_computed_values():
    # mse: (0 + 0 + 1)/3, (0.25 + 0.25 + 4)/3, (4 + 0 + 4)/3 per example; stablemax on [2, 0, −1]: s = [3, 1, 1/2],
    # p = [2/3, 2/9, 1/9], so the label-2 loss is log 9
    np.testing.assert_allclose(reference_mse(LOGITS, LABELS), [1 / 3, 1.5, 8 / 3])
    np.testing.assert_allclose(reference_stablemax(LOGITS[2:], LABELS[2:]), [np.log(9.0)])
    z, y, w = as_f32(LOGITS, LABELS, np.ones(3))
    assert float(jax.jit(losses.mse)(z, y, w)[0]) == pytest.approx((1 / 3 + 1.5 + 8 / 3) / 3, rel=1e-6)
    last = as_f32(LOGITS[2:], LABELS[2:], np.ones(1))
    assert float(jax.jit(losses.stablemax)(*last)[0]) == pytest.approx(np.log(9.0), rel=1e-6)


@pytest.mark.parametrize(
    "name,reference",
    [("cross_entropy", reference_cross_entropy), ("mse", reference_mse), ("stablemax", reference_stablemax)],
)
@pytest.mark.parametrize("weights", [np.ones(3), np.array([1.0, 0.0, 1.0]), np.zeros(3)])
def test_each_loss_is_the_weighted_mean_of_its_float64_reference(name, reference, weights):
    z, y, w = as_f32(LOGITS, LABELS, weights)
    loss, accuracy = jax.jit(losses.LOSSES[name])(z, y, w)  # one program (its cache is shared across cases)
    assert float(loss) == pytest.approx(weighted(reference(LOGITS, LABELS), weights), rel=1e-6, abs=1e-7)
    # the accuracy is the logits' argmax under every loss: only example 0 has its label's logit largest
    assert float(accuracy) == pytest.approx(weighted(np.array([1.0, 0.0, 0.0]), weights))


def test_cross_entropy_is_the_metrics_loss_bit_for_bit():
    z, y, w = as_f32(np.random.default_rng(0).normal(size=(16, 7)) * 5, np.arange(16) % 7, np.ones(16))
    for a, b in zip(jax.jit(losses.cross_entropy)(z, y, w), jax.jit(loss_and_accuracy)(z, y, w)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert losses.loss_function("default") is losses.loss_function("cross_entropy") is losses.cross_entropy


def test_stablemax_keeps_a_tiny_loss_that_the_direct_ratio_rounds_to_zero():
    z = np.array([[1e9, 0.0, 0.0, 0.0], [-3e7, 2.0, 0.0, -1.0]])
    y = np.array([0, 1])
    expected = reference_stablemax(z, y)  # the first ≈ 3e-9
    got = np.asarray(jax.jit(jax.vmap(losses.stablemax_nll))(*as_f32(z, y)))
    np.testing.assert_allclose(got, expected, rtol=1e-5)

    @jax.jit
    def direct_ratio(logits):
        s = losses.stablemax_s(logits)
        return -jnp.log(s[0, 0] / jnp.sum(s))

    assert float(direct_ratio(jnp.asarray(z[:1], jnp.float32))) == 0.0  # the authors' formula in float32: lost


def test_s_is_continuous_with_a_continuous_derivative_at_zero_and_finite_gradients():
    s, ds = jax.jit(losses.stablemax_s), jax.jit(jax.vmap(jax.grad(losses.stablemax_s)))
    assert float(s(jnp.float32(0.0))) == 1.0
    for eps in (1e-3, 1e-6):
        assert float(s(jnp.float32(eps))) == pytest.approx(1.0, abs=2 * eps)
        assert float(s(jnp.float32(-eps))) == pytest.approx(1.0, abs=2 * eps)
    x = jnp.array([-1e-6, 0.0, 1e-6, 1.0, 3.0, -1.0, -3.0], jnp.float32)
    np.testing.assert_allclose(np.asarray(ds(x)), [1.0, 1.0, 1.0, 1.0, 1.0, 0.25, 1 / 16], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(s(x)), reference_s(np.asarray(x, np.float64)), rtol=1e-6)


def test_stablemax_gradient_matches_its_float64_derivative():
    """∂ℓ/∂z_c = s'(z_c)/Σ s − 1[c = y] s'(z_y)/s(z_y), s'(x) = 1 for x ≥ 0 and 1/(1 − x)² for x < 0."""
    z = np.array([[2.0, 0.0, -1.0, 1.0], [-0.5, 3.0, -2.0, 0.25]])
    y = np.array([2, 0])
    s = reference_s(z)
    ds = np.where(z >= 0, 1.0, 1.0 / (1.0 - np.minimum(z, 0.0)) ** 2)
    expected = ds / s.sum(axis=-1, keepdims=True) - np.eye(4)[y] * (ds / s)
    expected /= len(y)  # the mean over the two examples
    zf, yf, w = as_f32(z, y, np.ones(2))
    got = jax.jit(jax.grad(lambda logits: losses.stablemax(logits, yf, w)[0]))(zf)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-7)


def test_mse_gradient_is_twice_the_error_over_classes_and_examples():
    zf, yf, w = as_f32(LOGITS, LABELS, np.ones(3))
    got = jax.jit(jax.grad(lambda logits: losses.mse(logits, yf, w)[0]))(zf)
    np.testing.assert_allclose(np.asarray(got), 2 * (LOGITS - np.eye(3)[LABELS]) / (3 * 3), rtol=1e-6)


def test_an_unknown_loss_lists_the_known_ones():
    with pytest.raises(ConfigError, match="'hinge'.*default, cross_entropy, mse, stablemax"):
        losses.loss_function("hinge")


def test_the_temperature_divides_only_when_the_run_holds_it():
    z = jnp.asarray(LOGITS, jnp.float32)
    assert losses.tempered(z, {"seed": 0}) is z
    assert not losses.has_temperature({"seed": 0}) and losses.temperature_metrics({"seed": (0,)}) == ()
    assert losses.temperature_metrics({"temperature": (2.0,)}) == ("effective_logit_scale",)
    ones = jnp.ones(3)
    tempered, effective, plain = (jax.jit(f) for f in (losses.tempered, losses.effective_logit_scale, logit_scale))
    for tau in (0.5, 2.0, 4.0):  # powers of two: z/τ, its square, mean and root are all exact
        hparams = {"temperature": jnp.float32(tau)}
        np.testing.assert_array_equal(np.asarray(tempered(z, hparams)), LOGITS.astype(np.float32) / tau)
        assert float(effective(z, hparams, ones)) == float(plain(z, ones)) / tau
    assert losses.TEMPERATURE.optional and losses.TEMPERATURE.identity == 1.0
    assert losses.TEMPERATURE.check((0.5, 2.0)) is None
    assert "must be > 0" in losses.TEMPERATURE.check((1.0, 0.0)) and "must be > 0" in losses.TEMPERATURE.check((-1,))
