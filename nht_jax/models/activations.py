"""Activation functions by name."""

from typing import Literal

import jax
import jax.numpy as jnp

Activation = Literal["quadratic", "relu", "gelu", "tanh", "silu"]

ACTIVATIONS = {
    "quadratic": jnp.square,
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
    "tanh": jnp.tanh,
    "silu": jax.nn.silu,
}
