"""The companion paper's transformer (nht_jax.models.transformer): PyTorch-default initialisation, the post-norm
block against a hand computation, the exact GELU, and the default model left bit for bit as it was."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy.special import erf

from nht_jax.models.activations import ACTIVATIONS
from nht_jax.models.transformer import TransformerSettings

D, HEADS, MLP, P = 128, 4, 512, 97
COMPANION = dict(
    d_model=D, n_heads=HEADS, d_mlp=MLP, activation="gelu_exact", layer_norm="post", layer_norm_eps=1e-5, init="pytorch"
)


def companion_params(seed=0, **kw):
    model = TransformerSettings(**{**COMPANION, **kw}).build(P, P, 2)
    return model, jax.jit(model.init)(jax.random.PRNGKey(seed), jnp.zeros((1, 2), jnp.int32))["params"]


random_ints = jax.jit(jax.random.randint, static_argnums=1)  # the same draws as jax.random.randint, one program


def flat(params) -> dict:
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(params)}


# ----------------------------------------------------------------------------- parameters and initialisation

EXPECTED_SHAPES = {
    "['tok_embed']['embedding']": (P, D),
    "['pos_embed']": (2, D),
    "['attn']['query']['kernel']": (D, HEADS, D // HEADS),
    "['attn']['key']['kernel']": (D, HEADS, D // HEADS),
    "['attn']['value']['kernel']": (D, HEADS, D // HEADS),
    "['attn']['query']['bias']": (HEADS, D // HEADS),
    "['attn']['key']['bias']": (HEADS, D // HEADS),
    "['attn']['value']['bias']": (HEADS, D // HEADS),
    "['attn']['out']['kernel']": (HEADS, D // HEADS, D),
    "['attn']['out']['bias']": (D,),
    "['ln_attn']['scale']": (D,),
    "['ln_attn']['bias']": (D,),
    "['ln_mlp']['scale']": (D,),
    "['ln_mlp']['bias']": (D,),
    "['mlp_in']['kernel']": (D, MLP),
    "['mlp_in']['bias']": (MLP,),
    "['mlp_out']['kernel']": (MLP, D),
    "['mlp_out']['bias']": (D,),
    "['ln_final']['scale']": (D,),
    "['ln_final']['bias']": (D,),
    "['head']['kernel']": (D, P),
    "['head']['bias']": (P,),
}


def test_parameter_names_shapes_and_count_match_pytorch():
    params = flat(companion_params()[1])
    assert {k: v.shape for k, v in params.items()} == EXPECTED_SHAPES
    # PyTorch: Embedding 97·128, positions 2·128, in_proj (384×128)+384, out_proj 128·128+128, linear1/2,
    # norm1, norm2, final LayerNorm, head 128·97+97.
    torch_count = (
        P * D + 2 * D + (3 * D * D + 3 * D) + (D * D + D) + (D * MLP + MLP) + (MLP * D + D) + 3 * 2 * D + (D * P + P)
    )
    assert sum(v.size for v in params.values()) == torch_count == 223_713


def expected_initial_sq_norm() -> float:
    """E‖θ‖² under PyTorch's defaults: N(0,1) entries count 1, U(±b) entries b²/3, LayerNorm scales 1."""

    def u(n, b):
        return n * b * b / 3

    return (
        (P * D + 2 * D)
        + u(3 * D * D, math.sqrt(6 / (4 * D)))
        + u(D * D, D**-0.5)
        + u(D * MLP + MLP, D**-0.5)
        + u(MLP * D + D, MLP**-0.5)
        + 3 * D
        + u(D * P + P, D**-0.5)
    )


def test_pytorch_initialisation_statistics():
    params = flat(companion_params(seed=1)[1])
    uniform = {  # name → PyTorch bound
        "['attn']['query']['kernel']": math.sqrt(6 / (D + 3 * D)),
        "['attn']['key']['kernel']": math.sqrt(6 / (4 * D)),
        "['attn']['value']['kernel']": math.sqrt(6 / (4 * D)),
        "['attn']['out']['kernel']": D**-0.5,
        "['mlp_in']['kernel']": D**-0.5,
        "['mlp_in']['bias']": D**-0.5,
        "['mlp_out']['kernel']": MLP**-0.5,
        "['mlp_out']['bias']": MLP**-0.5,
        "['head']['kernel']": D**-0.5,
        "['head']['bias']": D**-0.5,
    }
    for name, bound in uniform.items():
        w = params[name].ravel()
        assert np.abs(w).max() <= bound, name
        assert np.abs(w).max() > bound * (1 - 20 / w.size) if w.size > 1000 else np.abs(w).max() > 0.8 * bound, name
        assert w.var() == pytest.approx(bound**2 / 3, rel=8 / math.sqrt(w.size)), name
    for name in ("['tok_embed']['embedding']", "['pos_embed']"):
        e = params[name].ravel()
        assert abs(e.mean()) < 5 / math.sqrt(e.size) and e.std() == pytest.approx(
            1.0, rel=0.15 if e.size < 1000 else 0.03
        )
    for name in ("query", "key", "value", "out"):
        assert not params[f"['attn']['{name}']['bias']"].any()
    for ln in ("ln_attn", "ln_mlp", "ln_final"):
        assert (params[f"['{ln}']['scale']"] == 1).all() and not params[f"['{ln}']['bias']"].any()
    # ‖θ‖² at initialisation: the paper's runs start near 13,500; E‖θ‖² ≈ 13,538, seed-to-seed sd ≈ 200.
    assert expected_initial_sq_norm() == pytest.approx(13_538, abs=1)
    norms = [
        sum(float(np.sum(v.astype(np.float64) ** 2)) for v in flat(companion_params(seed=s)[1]).values())
        for s in range(4)
    ]
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
    q, k, v = (
        np.einsum("btd,dhk->bthk", x, g[f"['attn']['{n}']['kernel']"]) + g[f"['attn']['{n}']['bias']"]
        for n in ("query", "key", "value")
    )
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
    settings = TransformerSettings(
        d_model=8, n_heads=2, d_mlp=16, activation="gelu_exact", layer_norm="post", layer_norm_eps=1e-5, init="pytorch"
    )
    model = settings.build(5, 7, 3)
    tokens = np.asarray(random_ints(jax.random.PRNGKey(2), (6, 3), 0, 5))
    params = jax.jit(model.init)(jax.random.PRNGKey(4), tokens[:1])["params"]
    # Non-trivial LayerNorm parameters, so a misplaced or missing norm shows.
    params = jax.jit(
        lambda params: jax.tree_util.tree_map_with_path(
            lambda k, v: (
                v + 0.3 * jax.random.normal(jax.random.PRNGKey(len(jax.tree_util.keystr(k))), v.shape)
                if "ln_" in jax.tree_util.keystr(k)
                else v
            ),
            params,
        )
    )(params)
    got = np.asarray(jax.jit(model.apply)({"params": params}, tokens), np.float64)
    want = reference_post_norm(flat(params), tokens, 2, 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gelu_exact_is_the_erf_form():
    x = np.linspace(-4, 4, 81)
    model_gelu = TransformerSettings(activation="gelu_exact")  # accepted by the settings
    assert model_gelu.activation == "gelu_exact"
    from nht_jax.models.transformer import TRANSFORMER_ACTIVATIONS

    np.testing.assert_allclose(
        np.asarray(TRANSFORMER_ACTIVATIONS["gelu_exact"](jnp.asarray(x))),
        0.5 * x * (1 + erf(x / math.sqrt(2))),
        atol=1e-6,
    )
    assert (
        np.abs(
            np.asarray(TRANSFORMER_ACTIVATIONS["gelu"](jnp.asarray(x))) - 0.5 * x * (1 + erf(x / math.sqrt(2)))
        ).max()
        > 1e-5
    )


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
        embed_init = nn.initializers.normal(self.d_model**-0.5)
        x = nn.Embed(self.vocab_size, self.d_model, embedding_init=embed_init, name="tok_embed")(tokens)
        x = x + self.param("pos_embed", embed_init, (self.n_ctx, self.d_model))
        pre = self.layer_norm == "pre"
        mask = nn.make_causal_mask(jnp.ones(tokens.shape, bool))
        h = self._norm(x, "ln_attn", pre)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.n_heads, precision=self.precision, name="attn")(
            h, h, mask=mask
        )
        h = self._norm(x, "ln_mlp", pre)
        h = ACTIVATIONS[self.activation](nn.Dense(self.d_mlp, precision=self.precision, name="mlp_in")(h))
        x = x + nn.Dense(self.d_model, precision=self.precision, name="mlp_out")(h)
        last = self._norm(x[..., -1, :], "ln_final", self.layer_norm in ("pre", "final"))
        return nn.Dense(self.num_classes, precision=self.precision, name="head")(last)


@pytest.mark.parametrize("layer_norm,activation", [("none", "quadratic"), ("final", "gelu"), ("pre", "relu")])
def test_default_initialisation_and_outputs_are_bit_identical(layer_norm, activation):
    tokens = random_ints(jax.random.PRNGKey(3), (16, 3), 0, 31)
    new = TransformerSettings(d_model=32, n_heads=4, d_mlp=64, activation=activation, layer_norm=layer_norm).build(
        31, 31, 3
    )
    old = LegacyTransformer(31, 31, 3, d_model=32, n_heads=4, d_mlp=64, activation=activation, layer_norm=layer_norm)
    p_new, p_old = (jax.jit(m.init)(jax.random.PRNGKey(0), tokens[:1]) for m in (new, old))
    assert jax.tree.structure(p_new) == jax.tree.structure(p_old)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(p_new), jax.tree.leaves(p_old)))
    assert np.array_equal(np.asarray(jax.jit(new.apply)(p_new, tokens)), np.asarray(jax.jit(old.apply)(p_old, tokens)))


# ----------------------------------------------------------------------------- block_positions = "readout"


def loss_and_grads(settings: TransformerSettings, params, tokens, labels):
    model = settings.build(P, P, tokens.shape[1])

    def loss(p):
        logits = model.apply({"params": p}, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), logits

    return jax.jit(jax.value_and_grad(loss, has_aux=True))(params)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        dict(layer_norm="pre", activation="gelu", init="flax"),
        dict(layer_norm="none", activation="quadratic", init="flax"),
    ],
    ids=["post", "pre", "none"],
)
def test_readout_positions_compute_the_same_function(kw):
    """The block at the last position only: the same parameters, and the same logits and gradients to float
    rounding (the head reads that position only; its keys and values still come from every position)."""
    every, readout = (TransformerSettings(**{**COMPANION, **kw, "block_positions": b}) for b in ("all", "readout"))
    tokens = random_ints(jax.random.PRNGKey(1), (256, 2), 0, P)
    labels = random_ints(jax.random.PRNGKey(2), (256,), 0, P)
    params = jax.jit(every.build(P, P, 2).init)(jax.random.PRNGKey(0), tokens[:1])["params"]
    other = jax.jit(readout.build(P, P, 2).init)(jax.random.PRNGKey(0), tokens[:1])["params"]
    assert flat(params).keys() == flat(other).keys()
    assert all(np.array_equal(a, b) for a, b in zip(flat(params).values(), flat(other).values()))
    (loss_all, logits_all), grads_all = loss_and_grads(every, params, tokens, labels)
    (loss_last, logits_last), grads_last = loss_and_grads(readout, params, tokens, labels)
    np.testing.assert_allclose(logits_last, logits_all, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss_last, loss_all, rtol=1e-6)
    for name, g in flat(grads_all).items():
        np.testing.assert_allclose(flat(grads_last)[name], g, rtol=1e-5, atol=1e-7, err_msg=name)


def test_readout_positions_skip_the_first_positions_block():
    """ "readout" does about half the arithmetic of "all" at two positions (XLA's FLOP count of one forward)."""
    tokens = jnp.zeros((64, 2), jnp.int32)

    def flops(block_positions):
        model = TransformerSettings(**COMPANION, block_positions=block_positions).build(P, P, 2)
        params = jax.jit(model.init)(jax.random.PRNGKey(0), tokens[:1])  # one program, not one per operation
        cost = jax.jit(model.apply).lower(params, tokens).compile().cost_analysis()
        return (cost[0] if isinstance(cost, list) else cost)["flops"]

    assert flops("readout") < 0.6 * flops("all")


def test_block_positions_default_keeps_the_digest_and_a_bad_value_is_refused():
    """The default ("all") is left out of config.toml and of the digest (existing results keep theirs);
    "readout" changes the digest (it changes trajectories in their last bits); another value is a ConfigError."""
    from nht_jax import experiment
    from nht_jax.base.errors import ConfigError

    base = experiment.load("companion-exact-cpu")
    assert base.model.block_positions == "all" and "block_positions" not in experiment.to_toml(base)
    assert experiment.digest(
        experiment.load("companion-exact-cpu", ["model.block_positions=all"])
    ) == experiment.digest(base)
    readout = experiment.load("companion-exact-cpu", ["model.block_positions=readout"])
    assert readout.model.block_positions == "readout" and experiment.digest(readout) != experiment.digest(base)
    assert experiment.from_dict(experiment.to_dict(readout)) == readout
    with pytest.raises(ConfigError, match="block_positions"):
        experiment.load("companion-exact-cpu", ["model.block_positions=first"])
