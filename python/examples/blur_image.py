#!/usr/bin/env python3
"""Blur an image with streamblur and show it beside the original.

    python3 blur_image.py IMAGE [--sigma 2] [--save FIGURE.png]

Loads IMAGE with Pillow, converts it to grayscale, blurs it with a Gaussian of
sigma 2 (on the GPU when there is one, else on the CPU backend) and shows the
original and the blurred image side by side with matplotlib, or saves the
figure with --save (no display needed).
"""
import argparse
import sys

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", help="input image (any format Pillow reads)")
    parser.add_argument("--sigma", type=float, default=2.0, help="Gaussian sigma in pixels (default 2)")
    parser.add_argument("--save", metavar="FIGURE", help="save the figure to this file instead of showing it")
    args = parser.parse_args(argv)

    if args.save:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    from PIL import Image

    import streamblur

    try:
        gray = np.asarray(Image.open(args.image).convert("L"))  # HxW uint8
    except (OSError, ValueError) as e:
        print(f"blur_image: cannot read {args.image}: {e}", file=sys.stderr)
        return 1
    blurred = streamblur.gaussian_blur(gray, args.sigma)
    where = "GPU" if streamblur.cuda_available() else "CPU"

    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    for ax, img, title in ((axes[0], gray, "original"), (axes[1], blurred, f"gaussian_blur sigma={args.sigma:g} ({where})")):
        ax.imshow(img, cmap="gray", vmin=0, vmax=255)
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    if args.save:
        fig.savefig(args.save, dpi=100)
        print(f"saved {args.save}")
    else:
        plt.show()
    return 0


if __name__ == "__main__":
    sys.exit(main())
