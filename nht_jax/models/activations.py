"""Activation functions by name."""

import jax
import jax.numpy as jnp

ACTIVATIONS = {
    "quadratic": jnp.square,
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
    "tanh": jnp.tanh,
    "silu": jax.nn.silu,
}
