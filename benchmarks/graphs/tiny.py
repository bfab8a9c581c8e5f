"""MLPerf Tiny's four reference networks as Relax programs, for the memory-tier benchmark.

The layer lists follow MLPerf Tiny v1.0's reference models (keyword spotting's DS-CNN,
visual wake words' MobileNetV1 at width 0.25, image classification's ResNet-8 on CIFAR-10,
anomaly detection's dense autoencoder on ToyADMOS), inference graphs with batch norm
folded into the convolutions as deployed; tensors are float32 here (the int8 models that
run on microcontrollers have a quarter of these bytes).

    ds_cnn()          1x1x49x10 MFCC -> conv 10x4/2 64 -> 4 x (depthwise 3x3, pointwise 64) -> 12
    mobilenet_v1()    1x3x96x96 -> conv 3x3/2 8 -> 13 depthwise-separable blocks -> 2
    resnet8()         1x3x32x32 -> conv 16 -> 3 residual stacks (16, 32/2, 64/2) -> 10
    autoencoder()     1x640 -> 4 x dense 128 -> 8 -> 4 x dense 128 -> 640
"""

from __future__ import annotations

from optplan.ir import Program

from .builder import Builder


def _conv(
    b: Builder, x: str, channels: int, kernel: tuple[int, int], stride: int = 1, groups: int = 1
) -> str:
    w = b.weight(f"w{len(b.params)}", (channels, b.shapes[x][1] // groups, *kernel))
    pad_h, pad_w = kernel[0] // 2, kernel[1] // 2
    out = b.op(
        "nn.conv2d",
        x,
        w,
        strides=(stride, stride),
        padding=(pad_h, pad_w, pad_h, pad_w),
        groups=groups,
    )
    return b.relu(out)


def _separable(b: Builder, x: str, channels: int, stride: int = 1) -> str:
    depthwise = _conv(b, x, b.shapes[x][1], (3, 3), stride, groups=b.shapes[x][1])
    return _conv(b, depthwise, channels, (1, 1))


def _head(b: Builder, x: str, classes: int) -> str:
    pooled = b.op("nn.adaptive_avg_pool2d", x, output_size=(1, 1))
    flat = b.reshape(pooled, (1, b.shapes[x][1]))
    return b.op("nn.softmax", _dense(b, flat, classes, relu=False), axis=-1)


def _dense(b: Builder, x: str, units: int, relu: bool = True) -> str:
    w = b.weight(f"w{len(b.params)}", (b.shapes[x][1], units))
    bias = b.weight(f"b{len(b.params)}", (units,))
    out = b.add(b.matmul(x, w), bias)
    return b.relu(out) if relu else out


def ds_cnn() -> Program:
    b = Builder()
    x = _conv(b, b.input("mfcc", (1, 1, 49, 10)), 64, (10, 4), 2)
    for _ in range(4):
        x = _separable(b, x, 64)
    return b.program(_head(b, x, 12))


def mobilenet_v1(width: float = 0.25, size: int = 96) -> Program:
    b = Builder()
    x = _conv(b, b.input("image", (1, 3, size, size)), int(32 * width), (3, 3), 2)
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    blocks += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for channels, stride in blocks:
        x = _separable(b, x, int(channels * width), stride)
    return b.program(_head(b, x, 2))


def resnet8() -> Program:
    b = Builder()
    x = _conv(b, b.input("image", (1, 3, 32, 32)), 16, (3, 3))
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        y = _conv(b, x, channels, (3, 3), stride)
        w = b.weight(f"w{len(b.params)}", (channels, channels, 3, 3))
        y = b.op("nn.conv2d", y, w, strides=(1, 1), padding=(1, 1, 1, 1))
        if stride != 1 or b.shapes[x][1] != channels:
            w = b.weight(f"w{len(b.params)}", (channels, b.shapes[x][1], 1, 1))
            x = b.op("nn.conv2d", x, w, strides=(stride, stride), padding=(0, 0, 0, 0))
        x = b.relu(b.add(x, y))
    return b.program(_head(b, x, 10))


def autoencoder() -> Program:
    b = Builder()
    x = b.input("frames", (1, 640))
    for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        x = _dense(b, x, units)
    return b.program(_dense(b, x, 640, relu=False))


TINY = {
    "ds_cnn_kws": ds_cnn,
    "mobilenet_v1_0.25_vww": mobilenet_v1,
    "resnet8_cifar10": resnet8,
    "dense_autoencoder_ad": autoencoder,
}
