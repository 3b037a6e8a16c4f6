"""Tasks: each builds a `Dataset` of every example once; runs split it in-trace by seed."""

from nht_jax.config import TaskConfig
from nht_jax.tasks.dataset import Dataset, split_masks, train_capacity
from nht_jax.tasks.modular import modular_dataset
from nht_jax.tasks.parity import sparse_parity_dataset


def make_dataset(task: TaskConfig):
    """The task's data, built once: a token `Dataset`, or `nht_jax.vision.data.ImageData` for image tasks."""
    if task.name == "images":
        from nht_jax.vision.data import load_image_data

        return load_image_data(task)
    if task.name == "modular":
        return modular_dataset(task.p, task.op, task.tokens)
    return sparse_parity_dataset(task.parity_n, task.parity_k, task.parity_samples, task.data_seed)


__all__ = ["Dataset", "make_dataset", "modular_dataset", "sparse_parity_dataset", "split_masks", "train_capacity"]
