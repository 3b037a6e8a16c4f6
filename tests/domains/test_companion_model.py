"""The companion paper's exact setup (preset companion-exact): the transformer's PyTorch-default initialisation
and post-norm block, minibatches drawn with replacement, and the defaults left bit for bit as they were."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.domains.tokens import TrainState, minibatch
from nht_jax.models.activations import ACTIVATIONS
from nht_jax.models.transformer import TransformerSettings

D, HEADS, MLP, P = 128, 4, 512, 97
COMPANION = dict(d_model=D, n_heads=HEADS, d_mlp=MLP, activation="gelu_exact", layer_norm="post",
                 layer_norm_eps=1e-5, init="pytorch")


def companion_params(seed=0, **kw):
    model = TransformerSettings(**{**COMPANION, **kw}).build(P, P, 2)
    return model, jax.jit(model.init)(jax.random.PRNGKey(seed), jnp.zeros((1, 2), jnp.int32))["params"]


def flat(params) -> dict:
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(params)}


# ----------------------------------------------------------------------------- the preset

def test_presets_load_with_the_companion_choices():
    for name, steps, decays, seeds in [("companion-exact", 50000, 8, 10), ("companion-exact-cpu", 8000, 2, 2)]:
        c = experiment.load(name)
        assert c.model == TransformerSettings(**COMPANION)
        assert (c.optim.name, c.optim.b1, c.optim.b2, c.optim.eps, c.optim.decay_on) == ("adamw", 0.9, 0.999, 1e-8, "all")
        assert (c.train.batch_size, c.train.batch_sampling, c.train.log_every, c.train.steps) == (
            512, "with_replacement", 200, steps)
        assert (c.task.p, c.task.tokens, c.grid["train_fraction"], c.grid["learning_rate"]) == (97, "ab", (0.5,), (1e-3,))
        assert len(c.grid["weight_decay"]) == decays and len(c.grid["seed"]) == seeds
    with pytest.raises(ConfigError, match="batch_sampling"):
        experiment.load("companion-exact-cpu", ["train.batch_sampling=replace"])


# ----------------------------------------------------------------------------- parameters and initialisation

EXPECTED_SHAPES = {
    "['tok_embed']['embedding']": (P, D), "['pos_embed']": (2, D),
    "['attn']['query']['kernel']": (D, HEADS, D // HEADS), "['attn']['key']['kernel']": (D, HEADS, D // HEADS),
    "['attn']['value']['kernel']": (D, HEADS, D // HEADS), "['attn']['query']['bias']": (HEADS, D // HEADS),
    "['attn']['key']['bias']": (HEADS, D // HEADS), "['attn']['value']['bias']": (HEADS, D // HEADS),
    "['attn']['out']['kernel']": (HEADS, D // HEADS, D), "['attn']['out']['bias']": (D,),
    "['ln_attn']['scale']": (D,), "['ln_attn']['bias']": (D,), "['ln_mlp']['scale']": (D,), "['ln_mlp']['bias']": (D,),
    "['mlp_in']['kernel']": (D, MLP), "['mlp_in']['bias']": (MLP,), "['mlp_out']['kernel']": (MLP, D),
    "['mlp_out']['bias']": (D,), "['ln_final']['scale']": (D,), "['ln_final']['bias']": (D,),
    "['head']['kernel']": (D, P), "['head']['bias']": (P,),
}


def test_parameter_names_shapes_and_count_match_pytorch():
    params = flat(companion_params()[1])
    assert {k: v.shape for k, v in params.items()} == EXPECTED_SHAPES
    # PyTorch: Embedding 97·128, positions 2·128, in_proj (384×128)+384, out_proj 128·128+128, linear1/2,
    # norm1, norm2, final LayerNorm, head 128·97+97.
    torch_count = (P * D + 2 * D + (3 * D * D + 3 * D) + (D * D + D) + (D * MLP + MLP) + (MLP * D + D)
                   + 3 * 2 * D + (D * P + P))
    assert sum(v.size for v in params.values()) == torch_count == 223_713


def expected_initial_sq_norm() -> float:
    """E‖θ‖² under PyTorch's defaults: N(0,1) entries count 1, U(±b) entries b²/3, LayerNorm scales 1."""
    u = lambda n, b: n * b * b / 3
    return ((P * D + 2 * D) + u(3 * D * D, math.sqrt(6 / (4 * D))) + u(D * D, D ** -0.5)
            + u(D * MLP + MLP, D ** -0.5) + u(MLP * D + D, MLP ** -0.5) + 3 * D + u(D * P + P, D ** -0.5))


def test_pytorch_initialisation_statistics():
    params = flat(companion_params(seed=1)[1])
    uniform = {  # name → PyTorch bound
        "['attn']['query']['kernel']": math.sqrt(6 / (D + 3 * D)), "['attn']['key']['kernel']": math.sqrt(6 / (4 * D)),
        "['attn']['value']['kernel']": math.sqrt(6 / (4 * D)), "['attn']['out']['kernel']": D ** -0.5,
        "['mlp_in']['kernel']": D ** -0.5, "['mlp_in']['bias']": D ** -0.5,
        "['mlp_out']['kernel']": MLP ** -0.5, "['mlp_out']['bias']": MLP ** -0.5,
        "['head']['kernel']": D ** -0.5, "['head']['bias']": D ** -0.5,
    }
    for name, bound in uniform.items():
        w = params[name].ravel()
        assert np.abs(w).max() <= bound, name
        assert np.abs(w).max() > bound * (1 - 20 / w.size) if w.size > 1000 else np.abs(w).max() > 0.8 * bound, name
        assert w.var() == pytest.approx(bound ** 2 / 3, rel=8 / math.sqrt(w.size)), name
    for name in ("['tok_embed']['embedding']", "['pos_embed']"):
        e = params[name].ravel()
        assert abs(e.mean()) < 5 / math.sqrt(e.size) and e.std() == pytest.approx(1.0, rel=0.15 if e.size < 1000 else 0.03)
    for name in ("query", "key", "value", "out"):
        assert not params[f"['attn']['{name}']['bias']"].any()
    for ln in ("ln_attn", "ln_mlp", "ln_final"):
        assert (params[f"['{ln}']['scale']"] == 1).all() and not params[f"['{ln}']['bias']"].any()
    # ‖θ‖² at initialisation: the paper's runs start near 13,500; E‖θ‖² ≈ 13,538, seed-to-seed sd ≈ 200.
    assert expected_initial_sq_norm() == pytest.approx(13_538, abs=1)
    norms = [sum(float(np.sum(v.astype(np.float64) ** 2)) for v in flat(companion_params(seed=s)[1]).values())
             for s in range(4)]
    assert all(abs(n - expected_initial_sq_norm()) < 800 for n in norms), norms


# ----------------------------------------------------------------------------- the post-norm block

def reference_post_norm(params: dict, tokens: np.ndarray, n_heads: int, eps: float) -> np.ndarray:
    """PyTorch's TransformerEncoderLayer(norm_first=False, activation="gelu", no mask) + final LayerNorm + head
    on the last position, by hand in float64."""
    g = {k: v.astype(np.float64) for k, v in params.items()}

    def ln(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * g[f"['{name}']['scale']"] + g[f"['{name}']['bias']"]

    x = g["['tok_embed']['embedding']"][tokens] + g["['pos_embed']"]
    b, t, d = x.shape
    hd = d // n_heads
    q, k, v = (np.einsum("btd,dhk->bthk", x, g[f"['attn']['{n}']['kernel']"]) + g[f"['attn']['{n}']['bias']"]
               for n in ("query", "key", "value"))
    scores = np.einsum("bqhk,bshk->bhqs", q, k) / math.sqrt(hd)  # no mask: every position sees every key
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    heads = np.einsum("bhqs,bshk->bqhk", weights, v)
    attn = np.einsum("bqhk,hkd->bqd", heads, g["['attn']['out']['kernel']"]) + g["['attn']['out']['bias']"]
    x = ln(x + attn, "ln_attn")
    h = x @ g["['mlp_in']['kernel']"] + g["['mlp_in']['bias']"]
    h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
    x = ln(x + h @ g["['mlp_out']['kernel']"] + g["['mlp_out']['bias']"], "ln_mlp")
    return ln(x[:, -1], "ln_final") @ g["['head']['kernel']"] + g["['head']['bias']"]


def test_post_norm_block_equals_a_hand_computation():
    settings = TransformerSettings(d_model=8, n_heads=2, d_mlp=16, activation="gelu_exact", layer_norm="post",
                                   layer_norm_eps=1e-5, init="pytorch")
    model = settings.build(5, 7, 3)
    tokens = np.asarray(jax.random.randint(jax.random.PRNGKey(2), (6, 3), 0, 5))
    params = jax.jit(model.init)(jax.random.PRNGKey(4), tokens[:1])["params"]
    # Non-trivial LayerNorm parameters, so a misplaced or missing norm shows.
    params = jax.tree_util.tree_map_with_path(
        lambda k, v: v + 0.3 * jax.random.normal(jax.random.PRNGKey(len(jax.tree_util.keystr(k))), v.shape)
        if "ln_" in jax.tree_util.keystr(k) else v, params)
    got = np.asarray(jax.jit(model.apply)({"params": params}, tokens), np.float64)
    want = reference_post_norm(flat(params), tokens, 2, 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gelu_exact_is_the_erf_form():
    x = np.linspace(-4, 4, 81)
    model_gelu = TransformerSettings(activation="gelu_exact")  # accepted by the settings
    assert model_gelu.activation == "gelu_exact"
    from nht_jax.models.transformer import TRANSFORMER_ACTIVATIONS
    np.testing.assert_allclose(np.asarray(TRANSFORMER_ACTIVATIONS["gelu_exact"](jnp.asarray(x))),
                               0.5 * x * (1 + erf(x / math.sqrt(2))), atol=1e-6)
    assert np.abs(np.asarray(TRANSFORMER_ACTIVATIONS["gelu"](jnp.asarray(x))) - 0.5 * x * (1 + erf(x / math.sqrt(2)))).max() > 1e-5


# ----------------------------------------------------------------------------- minibatches with replacement

def token_state(n_train: int, capacity: int, seed: int = 0) -> TrainState:
    order = jax.random.permutation(jax.random.PRNGKey(seed + 100), 1000)
    return TrainState(params={}, opt_state=(), step=jnp.zeros((), jnp.int32), batch_key=jax.random.PRNGKey(seed),
                      train_index=order[:capacity],
                      train_weight=(jnp.arange(capacity) < n_train).astype(jnp.float32),
                      test_weight=jnp.zeros(1000, jnp.float32))


def test_with_replacement_draws_only_the_runs_train_rows_with_duplicates():
    state = token_state(n_train=40, capacity=64)
    own = set(np.asarray(state.train_index[:40]).tolist())
    draw = jax.jit(lambda s, t: minibatch(s._replace(step=t), 32, True))
    seen, duplicates = set(), 0
    for t in range(20):
        rows, weight = (np.asarray(a) for a in draw(state, t))
        assert rows.shape == (32,) and (weight == 1).all()
        assert set(rows.tolist()) <= own
        duplicates += len(rows) - len(set(rows.tolist()))
        seen |= set(rows.tolist())
    assert duplicates > 0 and seen == own  # 32 of 40 with replacement: repeats in (almost) every batch
    # More rows than the train set: still batch_size draws.
    rows, weight = minibatch(state, 100, True)
    assert rows.shape == (100,) and set(np.asarray(rows).tolist()) <= own


def test_with_replacement_is_deterministic_per_key_and_step():
    state = token_state(n_train=500, capacity=600)
    a = np.asarray(minibatch(state._replace(step=jnp.int32(7)), 64, True)[0])
    b = np.asarray(minibatch(state._replace(step=jnp.int32(7)), 64, True)[0])
    c = np.asarray(minibatch(state._replace(step=jnp.int32(8)), 64, True)[0])
    d = np.asarray(minibatch(token_state(500, 600, seed=1)._replace(step=jnp.int32(7)), 64, True)[0])
    assert (a == b).all() and not (a == c).all() and not (a == d).all()
    # Uniform over the run's rows: each of 500 rows drawn about 64·200/500 ≈ 26 times in 200 steps.
    draw = jax.jit(lambda t: minibatch(state._replace(step=t), 64, True)[0])
    rows = np.concatenate([np.asarray(draw(jnp.int32(t))) for t in range(200)])
    counts = np.unique(rows, return_counts=True)[1]
    assert set(rows.tolist()) == set(np.asarray(state.train_index[:500]).tolist()) and counts.max() < 60


def test_trainer_uses_with_replacement_batches(tiny_config):
    """A trainer with batch_sampling = "with_replacement" differs from the default one after a step, and its
    batch is drawn even when batch_size exceeds the train set (the default then trains full batch)."""
    def one_step(**train):
        config = tiny_config(**train)
        trainer, hparams = experiment.make_trainer(config), {k: v[0] for k, v in config.runs().items()}
        return flat(jax.jit(trainer.step)(jax.jit(trainer.init)(hparams), hparams).params)

    a, b = one_step(batch_size=64), one_step(batch_size=64, batch_sampling="with_replacement")
    assert any(not np.array_equal(a[k], b[k]) for k in a)
    big, full = one_step(batch_size=10_000, batch_sampling="with_replacement"), one_step(batch_size=0)
    assert any(not np.array_equal(big[k], full[k]) for k in big)


# ----------------------------------------------------------------------------- defaults unchanged, bit for bit

class LegacyTransformer(nn.Module):
    """The module as it was before the post-norm block and PyTorch initialisation existed (copied verbatim)."""
    vocab_size: int
    num_classes: int
    n_ctx: int
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    activation: str = "gelu"
    layer_norm: str = "none"
    precision: str = "highest"

    def _norm(self, x, name, used):
        return nn.LayerNorm(name=name)(x) if used else x

    @nn.compact
    def __call__(self, tokens):
        embed_init = nn.initializers.normal(self.d_model ** -0.5)
        x = nn.Embed(self.vocab_size, self.d_model, embedding_init=embed_init, name="tok_embed")(tokens)
        x = x + self.param("pos_embed", embed_init, (self.n_ctx, self.d_model))
        pre = self.layer_norm == "pre"
        mask = nn.make_causal_mask(jnp.ones(tokens.shape, bool))
        h = self._norm(x, "ln_attn", pre)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.n_heads, precision=self.precision, name="attn")(h, h, mask=mask)
        h = self._norm(x, "ln_mlp", pre)
        h = ACTIVATIONS[self.activation](nn.Dense(self.d_mlp, precision=self.precision, name="mlp_in")(h))
        x = x + nn.Dense(self.d_model, precision=self.precision, name="mlp_out")(h)
        last = self._norm(x[..., -1, :], "ln_final", self.layer_norm in ("pre", "final"))
        return nn.Dense(self.num_classes, precision=self.precision, name="head")(last)


@pytest.mark.parametrize("layer_norm,activation", [("none", "quadratic"), ("final", "gelu"), ("pre", "relu")])
def test_default_initialisation_and_outputs_are_bit_identical(layer_norm, activation):
    tokens = jax.random.randint(jax.random.PRNGKey(3), (16, 3), 0, 31)
    new = TransformerSettings(d_model=32, n_heads=4, d_mlp=64, activation=activation, layer_norm=layer_norm).build(31, 31, 3)
    old = LegacyTransformer(31, 31, 3, d_model=32, n_heads=4, d_mlp=64, activation=activation, layer_norm=layer_norm)
    p_new, p_old = (jax.jit(m.init)(jax.random.PRNGKey(0), tokens[:1]) for m in (new, old))
    assert jax.tree.structure(p_new) == jax.tree.structure(p_old)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(p_new), jax.tree.leaves(p_old)))
    assert np.array_equal(np.asarray(jax.jit(new.apply)(p_new, tokens)), np.asarray(jax.jit(old.apply)(p_old, tokens)))


def legacy_minibatch(state, batch_size):
    """The without-replacement draw as it was (copied verbatim)."""
    scores = jax.random.uniform(jax.random.fold_in(state.batch_key, state.step), state.train_weight.shape)
    scores = jnp.where(state.train_weight > 0, scores, -1.0)
    picked_scores, picked = jax.lax.top_k(scores, batch_size)
    return state.train_index[picked], (picked_scores >= 0).astype(jnp.float32)


def test_default_minibatch_is_bit_identical():
    for n_train, batch in [(40, 32), (20, 32), (500, 64)]:
        state = token_state(n_train, 600)._replace(step=jnp.int32(5))
        for new, old in zip(minibatch(state, batch), legacy_minibatch(state, batch)):
            assert np.array_equal(np.asarray(new), np.asarray(old))
