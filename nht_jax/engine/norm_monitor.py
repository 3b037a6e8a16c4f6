"""A norm monitor for any optax loop: `record_norms` records ‖θ‖² and each top-level layer's ‖θ_layer‖² into its
own state and passes the updates through unchanged (docs/guides/monitor.md).

    tx = optax.chain(record_norms(every=10), optax.adamw(1e-3, weight_decay=1.0))
    updates, opt_state = tx.update(grads, opt_state, params)      # params are required: the monitor reads them
    steps, norm_sq, layers = history(opt_state)                    # host arrays, oldest record first

The recorded steps are 0, E, 2E, … (step 0 = the initial parameters); `norms_of(params)` gives the parameters after
the last update. The monitor may sit anywhere in the chain; its buffers are preallocated (`capacity`), and
`overflow` ("thin", the default, or "ring") says what happens when more records come.

What is recorded, where in the chain, the layers, capacity and overflow: docs/guides/monitor.md, "record_norms"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nht_jax.base.errors import ConfigError
from nht_jax.engine.metrics import sq_norm

OVERFLOWS = ("thin", "ring")


class Norms(NamedTuple):
    """‖θ‖² and ‖θ_layer‖² per top-level layer (float32 scalars)."""

    norm_sq: jnp.ndarray
    layers: dict[str, jnp.ndarray]


class NormHistoryState(NamedTuple):
    """`record_norms`' state: the call count, the current interval, the records written, and the buffers."""

    count: jnp.ndarray  # int32 (): calls of update so far (the step of the next call's params)
    every: jnp.ndarray  # int32 (): the current recording interval E
    written: jnp.ndarray  # int32 (): records written ("thin": records held; "ring": records ever written)
    steps: jnp.ndarray  # int32 (capacity,)
    norm_sq: jnp.ndarray  # float32 (capacity,)
    layers: dict[str, jnp.ndarray]  # {layer: float32 (capacity,)}


class History(NamedTuple):
    """The recorded history as host arrays, oldest record first."""

    steps: np.ndarray
    norm_sq: np.ndarray
    layers: dict[str, np.ndarray]


def layer_tree(params) -> dict:
    """{layer name: subtree}: the top-level entries of the parameters (a Flax {"params": …} wrapper unwrapped;
    a list or tuple by index; {} for a single array)."""
    if isinstance(params, Mapping) and set(params) == {"params"}:
        params = params["params"]
    if isinstance(params, Mapping):
        return {str(name): sub for name, sub in params.items()}
    if isinstance(params, (list, tuple)):
        return {str(i): sub for i, sub in enumerate(params)}
    return {}


def norms_of(params) -> Norms:
    """V = Σ θ² over every leaf, and V_layer = Σ θ² over each top-level layer's leaves (a pure function).

    Args:
        params: θ, a pytree.

    Returns:
        The Norms (V and {layer: V_layer}).
    """
    return Norms(sq_norm(params), {name: sq_norm(sub) for name, sub in layer_tree(params).items()})


def _check(every: int, capacity: int, overflow: str) -> None:
    if not (isinstance(every, int) and every >= 1):
        raise ConfigError(f"record_norms: every = {every!r} must be a whole number ≥ 1 (record every that many steps)")
    if not (isinstance(capacity, int) and capacity >= 2):
        raise ConfigError(
            f"record_norms: capacity = {capacity!r} must be a whole number ≥ 2 (records kept; for a "
            f"whole run of N steps take ⌊(N − 1)/every⌋ + 1)"
        )
    if overflow not in OVERFLOWS:
        raise ConfigError(f"record_norms: overflow = {overflow!r} is not one of {', '.join(OVERFLOWS)}")
    if overflow == "thin" and capacity % 2:
        raise ConfigError(
            f"record_norms: overflow = 'thin' halves the buffer when it fills, so capacity "
            f"({capacity}) must be even; take {capacity + 1}"
        )


def _thinned(state: NormHistoryState) -> NormHistoryState:
    """Every other record kept (the even multiples of E) at the front of the buffers, E doubled."""
    half = state.steps.shape[0] // 2

    def keep(buffer):
        return jnp.concatenate([buffer[0::2], jnp.zeros((half,), buffer.dtype)])

    return state._replace(
        every=state.every * 2,
        written=jnp.asarray(half, jnp.int32),
        steps=keep(state.steps),
        norm_sq=keep(state.norm_sq),
        layers={k: keep(v) for k, v in state.layers.items()},
    )


def _written(state: NormHistoryState, params, slot) -> NormHistoryState:
    norms = norms_of(params)
    return state._replace(
        written=state.written + 1,
        steps=state.steps.at[slot].set(state.count),
        norm_sq=state.norm_sq.at[slot].set(norms.norm_sq),
        layers={k: v.at[slot].set(norms.layers[k]) for k, v in state.layers.items()},
    )


def record_norms(
    every: int = 1, capacity: int = 1024, overflow: Literal["thin", "ring"] = "thin"
) -> optax.GradientTransformation:
    """An optax transformation that records (step, ‖θ‖², ‖θ_layer‖²) every `every` steps and returns the updates
    unchanged (module docstring: the step convention, the layers, the capacity and `overflow`).

    Args:
        every: the recording interval E in steps (records at steps 0, E, 2E, …).
        capacity: how many records the preallocated buffers hold.
        overflow: when more records come than fit: "thin" (keep the whole run at a doubled interval; capacity
            even) or "ring" (keep the newest `capacity`).

    Returns:
        optax.GradientTransformation: chain it anywhere; call `tx.update(grads, state, params)` (it reads params),
        and read the records with `nht_jax.engine.norm_monitor.history(opt_state)`.

    Raises:
        ConfigError: every or capacity not a positive integer, an unknown overflow, an odd capacity with "thin".

    Examples:
        >>> tx = optax.chain(nht_jax.record_norms(every=10), optax.adamw(1e-3, weight_decay=1.0))
        >>> updates, opt_state = tx.update(grads, opt_state, params)
        >>> steps, norm_sq, layers = history(opt_state)
    """
    _check(every, capacity, overflow)

    def init_fn(params):
        zeros = jnp.zeros((capacity,), jnp.float32)
        return NormHistoryState(
            jnp.zeros((), jnp.int32),
            jnp.asarray(every, jnp.int32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((capacity,), jnp.int32),
            zeros,
            {name: zeros for name in layer_tree(params)},
        )

    def update_fn(updates, state, params=None):
        if params is None:
            raise ConfigError("record_norms reads the parameters: call tx.update(grads, opt_state, params)")

        def record(s):
            if overflow == "thin":  # full: thin first; the step is then a multiple of the doubled E (capacity even)
                s = jax.lax.cond(s.written >= capacity, _thinned, lambda x: x, s)
                return _written(s, params, s.written)
            return _written(s, params, s.written % capacity)

        state = jax.lax.cond(state.count % state.every == 0, record, lambda s: s, state)
        return updates, state._replace(count=state.count + 1)

    return optax.GradientTransformation(init_fn, update_fn)


def find_state(opt_state) -> NormHistoryState:
    """The one `NormHistoryState` inside an optimiser state (a chain's tuple, nested wrappers)."""
    found = [
        s
        for s in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, NormHistoryState))
        if isinstance(s, NormHistoryState)
    ]
    if len(found) != 1:
        raise ConfigError(
            f"history: the optimiser state holds {len(found)} record_norms states, not one; "
            f"pass the record_norms state itself (e.g. opt_state[0] of optax.chain(record_norms(), …))"
        )
    return found[0]


def history(opt_state) -> History:
    """The records of `record_norms` as host arrays, oldest first: a record_norms state or any optimiser state
    holding exactly one (one run: index a vmapped state first).

    Args:
        opt_state: a record_norms state, or an optimiser state holding exactly one.

    Returns:
        The History: steps, V and V_layer at each record.
    """
    s = jax.device_get(find_state(opt_state))
    if np.ndim(s.written) != 0:
        raise ConfigError(
            f"history: the state is batched (written has shape {np.shape(s.written)}); "
            f"take one run first, e.g. jax.tree.map(lambda x: x[i], opt_state)"
        )
    capacity, written = s.steps.shape[0], int(s.written)
    held = min(written, capacity)
    order = (np.arange(held) + (written - held)) % capacity  # "thin": 0 … held − 1; "ring": oldest slot first
    return History(
        np.asarray(s.steps)[order], np.asarray(s.norm_sq)[order], {k: np.asarray(v)[order] for k, v in s.layers.items()}
    )


__all__ = ["History", "history", "norms_of", "record_norms"]
