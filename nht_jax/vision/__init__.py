"""Shortcut domains for vision (docs/science.md §4): the spurious border, image datasets, group metrics, CNN/ResNet18.

Pure building blocks with array inputs and outputs, meant to be called inside jit / vmap / lax.scan:
  border          spurious_border(images, labels, ρ, key) — colour law at correlation ρ (ρ may be traced)
  eval_sets       coloured / clean / shortcut / conflicting evaluation sets
  group_metrics   per-group, worst-group, average, train-weighted accuracy; shortcut reliance
  cnn, resnet     SimpleCNN (≈288K parameters at 32×32) and ResNet18 (batch / group / no norm)
  datasets        digits (offline), CIFAR-10 and CelebA (tfds.data_source), Waterbirds (folder)
"""

from nht_jax.vision.border import NO_BORDER, border_mask, paint_border, spurious_border
from nht_jax.vision.cnn import SimpleCNN, count_params, simple_cnn_param_count
from nht_jax.vision.eval_sets import clean_eval, coloured_eval
from nht_jax.vision.group_metrics import WATERBIRDS_TRAIN_GROUP_COUNTS, average_accuracy, group_ids, per_group_accuracy
from nht_jax.vision.palette import DEFAULT_PALETTE, GRAY
from nht_jax.vision.resnet import ResNet, ResNet18

# importable from here as before (each is in its own module), not listed: the evaluation sets' type, the other
# metrics and sets
from nht_jax.vision.border import sample_border_classes as sample_border_classes
from nht_jax.vision.eval_sets import EvalSet as EvalSet, conflicting_eval as conflicting_eval
from nht_jax.vision.eval_sets import shortcut_eval as shortcut_eval
from nht_jax.vision.group_metrics import predictions as predictions, shortcut_reliance as shortcut_reliance
from nht_jax.vision.group_metrics import weighted_group_accuracy as weighted_group_accuracy
from nht_jax.vision.group_metrics import worst_group_accuracy as worst_group_accuracy
from nht_jax.vision.palette import class_palette as class_palette

__all__ = [
    "DEFAULT_PALETTE",
    "GRAY",
    "NO_BORDER",
    "WATERBIRDS_TRAIN_GROUP_COUNTS",
    "ResNet",
    "ResNet18",
    "SimpleCNN",
    "average_accuracy",
    "border_mask",
    "clean_eval",
    "coloured_eval",
    "count_params",
    "group_ids",
    "paint_border",
    "per_group_accuracy",
    "simple_cnn_param_count",
    "spurious_border",
]
