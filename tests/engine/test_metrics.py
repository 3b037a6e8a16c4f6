"""Norms equal a hand computation on a tiny model."""

import jax
import numpy as np

from nht_jax.engine.metrics import layer_sq_norms, logit_scale, loss_and_accuracy, sq_norm, weight_sq_norm
from nht_jax.models import EmbedMLP


def test_norms_match_hand_computation():
    model = EmbedMLP(vocab_size=3, num_classes=2, n_ctx=2, hidden=(4,))
    params = jax.jit(model.init)(jax.random.PRNGKey(0), np.zeros((1, 2), np.int32))["params"]
    tables = np.asarray(params["embed"]["tables"])
    embed_bias = np.asarray(params["embed"]["bias"])
    kernel, bias = np.asarray(params["head"]["kernel"]), np.asarray(params["head"]["bias"])
    assert tables.shape == (2, 3, 4) and kernel.shape == (4, 2)
    by_hand_embed = (tables**2).sum() + (embed_bias**2).sum()
    by_hand_head = (kernel**2).sum() + (bias**2).sum()
    layers, total, weights = jax.jit(lambda p: (layer_sq_norms(p), sq_norm(p), weight_sq_norm(p)))(params)
    assert set(layers) == {"embed", "head"}
    np.testing.assert_allclose(float(layers["embed"]), by_hand_embed, rtol=1e-6)
    np.testing.assert_allclose(float(layers["head"]), by_hand_head, rtol=1e-6)
    np.testing.assert_allclose(float(total), by_hand_embed + by_hand_head, rtol=1e-6)
    np.testing.assert_allclose(float(weights), (tables**2).sum() + (kernel**2).sum(), rtol=1e-6)


def test_model_is_one_hot_dense_layer():
    model = EmbedMLP(vocab_size=3, num_classes=2, n_ctx=2, hidden=(4,), activation="relu")
    params = jax.jit(model.init)(jax.random.PRNGKey(1), np.zeros((1, 2), np.int32))["params"]
    tokens = np.array([[2, 0], [1, 1]])
    p = jax.tree.map(np.asarray, params)
    onehot = np.concatenate([np.eye(3)[tokens[:, 0]], np.eye(3)[tokens[:, 1]]], axis=1)
    h = np.maximum(onehot @ p["embed"]["tables"].reshape(6, 4) + p["embed"]["bias"], 0)
    logits = jax.jit(model.apply)({"params": params}, tokens)
    np.testing.assert_allclose(logits, h @ p["head"]["kernel"] + p["head"]["bias"], rtol=1e-5, atol=1e-6)


def test_masked_loss_accuracy_and_logit_scale():
    logits = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    labels = np.array([0, 0, 1])
    weights = np.array([1.0, 1.0, 0.0])
    loss, acc = jax.jit(loss_and_accuracy)(logits, labels, weights)
    expected = (np.log1p(np.exp(-2.0)) + np.log1p(np.exp(3.0))) / 2
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)
    assert float(acc) == 0.5
    np.testing.assert_allclose(float(jax.jit(logit_scale)(logits, weights)), np.sqrt((4 + 9) / 4), rtol=1e-6)


def test_parameter_metrics_head_norm_is_the_head_layer_and_a_nan_loss_is_not_finite():
    from nht_jax.engine.metrics import parameter_metrics

    model = EmbedMLP(vocab_size=3, num_classes=2, n_ctx=2, hidden=(4,))
    params = jax.jit(model.init)(jax.random.PRNGKey(0), np.zeros((1, 2), np.int32))["params"]
    metrics_at = jax.jit(parameter_metrics, static_argnames="divergence_norm")
    metrics = metrics_at(params, np.float32(0.5), divergence_norm=1e6)
    assert float(metrics["head_norm_sq"]) == float(metrics["layer_norm_sq/head"])
    assert float(metrics["head_norm_sq"]) != float(metrics["layer_norm_sq/embed"])
    assert float(metrics["finite"]) == 1.0
    for loss in (np.nan, np.inf):  # finite parameters, non-finite loss: diverged
        assert float(metrics_at(params, np.float32(loss), divergence_norm=1e6)["finite"]) == 0.0
    assert float(metrics_at(params, np.float32(0.5), divergence_norm=1e-6)["finite"]) == 0.0  # past divergence_norm
    assert np.isnan(float(parameter_metrics({"embed": params["embed"]}, np.float32(0.5), 1e6)["head_norm_sq"]))
