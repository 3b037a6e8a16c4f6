"""The companion paper's exact setup in the token domain (preset companion-exact): its choices load from the preset,
minibatches are drawn with replacement, and the default draw is left bit for bit as it was."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.domains.tokens import TrainState, minibatch
from nht_jax.models.transformer import TransformerSettings

D, HEADS, MLP, P = 128, 4, 512, 97
COMPANION = dict(
    d_model=D, n_heads=HEADS, d_mlp=MLP, activation="gelu_exact", layer_norm="post", layer_norm_eps=1e-5, init="pytorch"
)


def flat(params) -> dict:
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(params)}


# ----------------------------------------------------------------------------- the preset


def test_presets_load_with_the_companion_choices():
    for name, steps, decays, seeds in [("companion-exact", 50000, 8, 10), ("companion-exact-cpu", 8000, 2, 2)]:
        c = experiment.load(name)
        assert c.model == TransformerSettings(**COMPANION)
        assert (c.optim.name, c.optim.b1, c.optim.b2, c.optim.eps, c.optim.decay_on) == (
            "adamw",
            0.9,
            0.999,
            1e-8,
            "all",
        )
        assert (c.train.batch_size, c.train.batch_sampling, c.train.log_every, c.train.steps) == (
            512,
            "with_replacement",
            200,
            steps,
        )
        assert (c.task.p, c.task.tokens, c.grid["train_fraction"], c.grid["learning_rate"]) == (
            97,
            "ab",
            (0.5,),
            (1e-3,),
        )
        assert len(c.grid["weight_decay"]) == decays and len(c.grid["seed"]) == seeds
    with pytest.raises(ConfigError, match="batch_sampling"):
        experiment.load("companion-exact-cpu", ["train.batch_sampling=replace"])


# ----------------------------------------------------------------------------- minibatches with replacement


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def token_state(n_train: int, capacity: int, seed: int = 0) -> TrainState:
    order = jax.random.permutation(jax.random.PRNGKey(seed + 100), 1000)
    return TrainState(
        params={},
        opt_state=(),
        step=jnp.zeros((), jnp.int32),
        batch_key=jax.random.PRNGKey(seed),
        train_index=order[:capacity],
        train_weight=(jnp.arange(capacity) < n_train).astype(jnp.float32),
        test_weight=jnp.zeros(1000, jnp.float32),
    )


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
    rows, weight = jax.jit(lambda s: minibatch(s, 100, True))(state)
    assert rows.shape == (100,) and set(np.asarray(rows).tolist()) <= own


def test_with_replacement_is_deterministic_per_key_and_step():
    state = token_state(n_train=500, capacity=600)
    rows_of = jax.jit(lambda s: minibatch(s, 64, True)[0])
    a = np.asarray(rows_of(state._replace(step=jnp.int32(7))))
    b = np.asarray(rows_of(state._replace(step=jnp.int32(7))))
    c = np.asarray(rows_of(state._replace(step=jnp.int32(8))))
    d = np.asarray(rows_of(token_state(500, 600, 1)._replace(step=jnp.int32(7))))
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
        trainer, hparams = experiment.build_trainer(config), {k: v[0] for k, v in config.runs().items()}
        return flat(jax.jit(trainer.step)(jax.jit(trainer.init)(hparams), hparams).params)

    a, b = one_step(batch_size=64), one_step(batch_size=64, batch_sampling="with_replacement")
    assert any(not np.array_equal(a[k], b[k]) for k in a)
    big, full = one_step(batch_size=10_000, batch_sampling="with_replacement"), one_step(batch_size=0)
    assert any(not np.array_equal(big[k], full[k]) for k in big)


def legacy_minibatch(state, batch_size):
    """The without-replacement draw as it was (copied verbatim)."""
    scores = jax.random.uniform(jax.random.fold_in(state.batch_key, state.step), state.train_weight.shape)
    scores = jnp.where(state.train_weight > 0, scores, -1.0)
    picked_scores, picked = jax.lax.top_k(scores, batch_size)
    return state.train_index[picked], (picked_scores >= 0).astype(jnp.float32)


def test_default_minibatch_is_bit_identical():
    for n_train, batch in [(40, 32), (20, 32), (500, 64)]:
        state = token_state(n_train, 600)._replace(step=jnp.int32(5))
        # two programs (batch size static), so that XLA cannot share work between the two draws
        ours = jax.jit(functools.partial(minibatch, batch_size=batch))(state)
        for new, old in zip(ours, jax.jit(functools.partial(legacy_minibatch, batch_size=batch))(state)):
            assert np.array_equal(np.asarray(new), np.asarray(old))
