import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.domains.modular import modular_dataset
from nht_jax.domains.sparse_parity import sparse_parity_dataset
from nht_jax.domains.tokens import numpy_split


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_modular_labels_are_correct_for_every_pair(op):
    p = 13
    data = modular_dataset(p, op)
    for (a, b), c in zip(data.inputs, data.labels):
        if op == "/":
            assert b != 0 and (c * b) % p == a  # c = a / b  ⇔  c·b = a
        else:
            assert c == {"+": a + b, "-": a - b, "*": a * b}[op] % p
    assert len(data.labels) == (p * (p - 1) if op == "/" else p * p)
    assert data.num_classes == p and data.vocab_size == p


def test_equals_token_variant():
    data = modular_dataset(7, "+", tokens="ab=")
    assert data.inputs.shape == (49, 3) and (data.inputs[:, 2] == 7).all() and data.vocab_size == 8


def test_split_is_disjoint_covering_sized_and_deterministic():
    n = 31 * 31
    train, test = numpy_split(jax.random.PRNGKey(3), n, 0.3)
    assert len(np.intersect1d(train, test)) == 0
    assert len(train) + len(test) == n and len(np.union1d(train, test)) == n
    assert len(train) == round(0.3 * n)
    again, _ = numpy_split(jax.random.PRNGKey(3), n, 0.3)
    other, _ = numpy_split(jax.random.PRNGKey(4), n, 0.3)
    assert np.array_equal(train, again) and not np.array_equal(train, other)


def test_sparse_parity_labels_and_determinism():
    data = sparse_parity_dataset(n=10, k=3, samples=200, data_seed=5)
    assert np.array_equal(data.labels, data.inputs[:, :3].sum(1) % 2)
    assert np.array_equal(data.inputs, sparse_parity_dataset(10, 3, 200, 5).inputs)
    assert set(np.unique(data.labels)) == {0, 1}


def test_the_domain_named_in_the_task_loads_the_data():
    parity = experiment.from_dict(
        {"task": {"name": "sparse_parity", "parity_n": 8, "parity_k": 2, "parity_samples": 16}}
    )
    assert parity.domain.load_data(parity).num_classes == 2
    modular = experiment.from_dict({"task": {"name": "modular", "p": 5, "op": "-"}})
    assert modular.domain.load_data(modular).inputs.shape == (25, 2)
