"""Networks with long-lived tensors: a small UNet and a chain with a long skip."""

from __future__ import annotations

from optplan.ir import Program

from .builder import Builder


def unet(levels: int = 3, channels: int = 8, size: int = 32) -> Program:
    """Encoder (two 3x3 convs, 2x2 pool) per level, a bottleneck, and a decoder that
    upsamples (2x2 transposed conv) and concatenates the encoder's tensor of its level."""
    b = Builder()
    x = b.input("x", (1, 3, size, size))
    skips = []
    width = channels
    for _ in range(levels):
        x = b.relu(b.conv(b.relu(b.conv(x, width, 3)), width, 3))
        skips.append(x)
        x = b.pool(x, 2, 2)
        width *= 2
    x = b.relu(b.conv(b.relu(b.conv(x, width, 3)), width, 3))
    for skip in reversed(skips):
        width //= 2
        up_w = b.weight(f"up{len(b.params)}", (b.shapes[x][1], width, 2, 2))
        up = b.op("nn.conv2d_transpose", x, up_w, strides=(2, 2), kernel_layout="IOHW")
        x = b.concat([up, skip])
        x = b.relu(b.conv(b.relu(b.conv(x, width, 3)), width, 3))
    return b.program(b.conv(x, 2, 1))


def long_skip(depth: int = 12, channels: int = 8, size: int = 16) -> Program:
    """A wide projection of the input written first but read only at the end, around a
    long chain of convs (as a person writes a residual: the shortcut first)."""
    b = Builder()
    x = b.input("x", (1, channels, size, size))
    shortcut = b.relu(b.conv(x, channels, 1))
    y = x
    for _ in range(depth):
        y = b.relu(b.conv(y, 4 * channels, 3))
    y = b.conv(y, channels, 1)
    return b.program(b.relu(b.add(y, shortcut)))
