#!/usr/bin/env python3
"""Blur an image that lives in CUDA unified (managed) memory.

Makes a 256x256 test pattern with numpy directly in managed memory
(streamblur.managed_empty: numpy and the GPU share the same pages, no copies),
blurs it with a 3x3 box on the GPU, saves original_image.png and
blurred_image.png in the current directory, checks the result against the
plain CPU reference and prints "Test PASSED" with the largest difference (or
"Test FAILED" and exits non-zero).

Managed memory is for convenience, not speed: pages migrate on demand. Without
a GPU, managed_empty returns ordinary host memory and the blur runs on the CPU
backend; the demo says so and still checks the result.
"""
import sys

import numpy as np


def make_pattern(img):
    """Checkerboard, a bright square and a diagonal gradient, written in place."""
    h, w = img.shape
    y, x = np.mgrid[0:h, 0:w]
    img[:] = np.where(((y // 16) + (x // 16)) % 2 == 0, 40, 160).astype(np.uint8)
    img[h // 4 : h // 2, w // 4 : w // 2] = 255
    img[3 * h // 4 :, :] = ((x[3 * h // 4 :, :] * 255) // (w - 1)).astype(np.uint8)


def main():
    from PIL import Image

    import streamblur

    on_gpu = streamblur.cuda_available()
    image = streamblur.managed_empty((256, 256), np.uint8)
    managed = streamblur.is_managed(image)
    make_pattern(image)  # numpy writes straight into managed memory
    if managed:
        print("Running on the GPU; the image is in CUDA managed memory (no host copies).")
    else:
        print("No CUDA device: managed memory falls back to host memory; running on the CPU backend.")

    blurred = streamblur.box_blur(image, 1)  # 3x3 box; managed in, managed out
    Image.fromarray(np.asarray(image)).save("original_image.png")
    Image.fromarray(np.asarray(blurred)).save("blurred_image.png")
    print("Saved original_image.png and blurred_image.png")

    # The 3x3 mean, rounded half up, borders repeated: written out here with numpy.
    padded = np.pad(np.array(image).astype(np.int64), 1, mode="edge")
    h, w = image.shape[:2]
    sums = sum(padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3))
    reference = (sums + 4) // 9
    diff = int(np.max(np.abs(blurred.astype(np.int32) - reference.astype(np.int32))))
    backend = "GPU" if on_gpu else "CPU"
    if diff <= 1:
        print(f"Test PASSED ({backend}, largest difference from the CPU reference: {diff})")
        return 0
    print(f"Test FAILED ({backend}, largest difference from the CPU reference: {diff})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
