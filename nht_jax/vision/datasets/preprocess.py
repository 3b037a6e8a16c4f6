"""Image decoding and resizing with Pillow (host side, before caching)."""

from __future__ import annotations

import numpy as np
from PIL import Image


def square_resize(image: Image.Image, size: int) -> np.ndarray:
    """RGB uint8 (size, size, 3): centre-crop to the largest square, then resize with Pillow's
    antialiased bilinear filter. (Centre-cropping keeps the aspect ratio; Waterbirds and CelebA
    photographs are not square.)"""
    image = image.convert("RGB")
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    image = image.crop((left, top, left + side, top + side))
    if side != size:
        image = image.resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(image, dtype=np.uint8)


def square_resize_array(array: np.ndarray, size: int) -> np.ndarray:
    """`square_resize` for an (H, W, 3) or (H, W) uint8 array; a no-op copy when already size × size."""
    array = np.asarray(array, dtype=np.uint8)
    if array.shape[:2] == (size, size) and array.ndim == 3 and array.shape[2] == 3:
        return array.copy()
    return square_resize(Image.fromarray(array), size)
