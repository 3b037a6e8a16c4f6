"""The shard partition of a grid with static axes, by known answers and without training (issue 43): `bucket_sizes`
reads one bucket per static value (a grid without static axes is one bucket), and `runs_of` gives each shard's
block of the grid's runs, worked out by hand from the rule of `nht_jax.training.partition` (whole buckets when
K ≤ B, else bucket b gets ⌊(b+1)K/B⌋ − ⌊bK/B⌋ blocks as even as can be). tests/training/test_shards.py checks the
pure partition of bucket sizes and tests/training/test_static_buckets.py a bucketed merge on real training; this
file is what a mutation run of partition.py uses."""

from nht_jax.training import partition

from ..conftest import make_tiny_config


def bucketed():
    """3 width buckets × 2 λ × 2 seeds: 12 runs in 3 buckets of 4."""
    return make_tiny_config(grid={"width": [16, 32, 64], "weight_decay": [0.1, 1.0], "seed": [0, 1]})


def test_bucket_sizes_are_one_per_static_value_or_the_whole_grid_without_static_axes():
    assert partition.bucket_sizes(bucketed()) == [4, 4, 4]
    plain = make_tiny_config(grid={"weight_decay": [0.01, 0.1, 1.0], "seed": [0, 1, 2, 3, 4]})
    assert partition.bucket_sizes(plain) == [15]


def test_runs_of_each_shard_of_a_bucketed_grid():
    """By hand, sizes [4, 4, 4]: K = 2 ≤ B = 3 gives buckets {0} and {1, 2}, runs [0, 4) and [4, 12); K = 5 gives
    the buckets 1, 2 and 2 blocks, [0, 4) | [4, 6) [6, 8) | [8, 10) [10, 12). The grid read as one bucket of 12
    would give [0, 6) [6, 12) and [0, 2) [2, 4) [4, 7) [7, 9) [9, 12)."""
    config = bucketed()
    assert [partition.runs_of(config, partition.Shard(i, 2)) for i in range(2)] == [(0, 4), (4, 12)]
    assert [partition.runs_of(config, partition.Shard(i, 5)) for i in range(5)] == [
        (0, 4),
        (4, 6),
        (6, 8),
        (8, 10),
        (10, 12),
    ]
