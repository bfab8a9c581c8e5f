"""Builds the int8 `.tflite` models that `benchmarks/tflm.py` and `tests/test_tflm.py` use.

Needs TensorFlow (`pip install tensorflow-cpu`), which optplan itself never imports:
install it in a virtual environment of its own and run

    /path/to/tf-venv/bin/python benchmarks/tflm_models.py --out tests/data/tflite

Each model is built in Keras with random weights (a fixed seed), then converted by
TFLite's own converter with full-integer quantization: int8 weights, activations, inputs
and outputs, calibrated on random representative data. Nothing is downloaded. The models:

- `ds_cnn`: DS-CNN keyword spotting (MLPerf Tiny): a 10x4 convolution, four depthwise-
  separable blocks of 64 channels, average pooling, 12 classes, on 49x10 MFCC features;
- `mobilenet_v1_025`: MobileNetV1 with width 0.25 on 96x96x3, 2 classes (visual wake
  words, MLPerf Tiny);
- `resnet8`: ResNet-8 for CIFAR-10 (MLPerf Tiny): three residual stacks of 16, 32, 64;
- `autoencoder`: the dense autoencoder of MLPerf Tiny's anomaly detection (640 -> 128 x4
  -> 8 -> 128 x4 -> 640);
- `mobilenet_v2_035`: MobileNetV2 with width 0.35 on 96x96x3, 10 classes;
- `transformer`: a two-layer transformer encoder (sequence 32, width 64, 2 heads, feed
  forward 128) with a pooled classifier.

Beside them, `while_loop.tflite`: a float loop (TFLite's WHILE operator, three
subgraphs), which optplan refuses to plan (tests/test_tflite.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

layers = tf.keras.layers


def _input(shape: tuple[int, ...]) -> tf.Tensor:
    # A batch of one, as on a device: every shape is static, so the converter folds the
    # shape computations (SHAPE, REDUCE_PROD) that TFLite Micro has no kernels for.
    return tf.keras.Input(shape, batch_size=1)


def ds_cnn() -> tf.keras.Model:
    inputs = _input((49, 10, 1))
    x = layers.Conv2D(64, (10, 4), strides=2, padding="same", use_bias=False)(inputs)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for _ in range(4):
        x = layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.Conv2D(64, 1, use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inputs, layers.Softmax()(layers.Dense(12)(x)))


def mobilenet_v1_025() -> tf.keras.Model:
    return tf.keras.applications.MobileNet(
        input_tensor=_input((96, 96, 3)), alpha=0.25, weights=None, classes=2
    )


def resnet8() -> tf.keras.Model:
    inputs = _input((32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same")(inputs)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = layers.Conv2D(filters, 3, strides=stride, padding="same")(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same")(y))
        if stride != 1:
            x = layers.Conv2D(filters, 1, strides=stride)(x)
        x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.AveragePooling2D(pool_size=8)(x)
    x = layers.Dense(10)(layers.Flatten()(x))
    return tf.keras.Model(inputs, layers.Softmax()(x))


def autoencoder() -> tf.keras.Model:
    inputs = _input((640,))
    x = inputs
    for width in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        x = layers.ReLU()(layers.BatchNormalization()(layers.Dense(width)(x)))
    return tf.keras.Model(inputs, layers.Dense(640)(x))


def mobilenet_v2_035() -> tf.keras.Model:
    return tf.keras.applications.MobileNetV2(
        input_tensor=_input((96, 96, 3)), alpha=0.35, weights=None, classes=10
    )


def transformer() -> tf.keras.Model:
    inputs = _input((32, 64))
    x = inputs
    for _ in range(2):
        attended = layers.MultiHeadAttention(num_heads=2, key_dim=32)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attended]))
        y = layers.Dense(64)(layers.Dense(128, activation="relu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling1D()(x)
    return tf.keras.Model(inputs, layers.Softmax()(layers.Dense(4)(x)))


MODELS: dict[str, Callable[[], tf.keras.Model]] = {
    "ds_cnn": ds_cnn,
    "mobilenet_v1_025": mobilenet_v1_025,
    "resnet8": resnet8,
    "autoencoder": autoencoder,
    "mobilenet_v2_035": mobilenet_v2_035,
    "transformer": transformer,
}


def calibrate_batch_norm(model: tf.keras.Model, data: np.ndarray) -> None:
    """Set every BatchNormalization's moving statistics to those it sees on `data`.

    With random weights the activations of a deep network shrink or grow layer by layer
    until the logits are nearly constant, and TFLite Micro's int8 softmax refuses an input
    scale that small (its multiplier must exceed 1). One forward pass in training mode
    with momentum 0 gives each layer the statistics of the activations it receives, as a
    trained network's would be: unit-scale activations throughout.
    """
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.momentum = 0.0
    model(data, training=True)


def int8_tflite(model: tf.keras.Model, seed: int) -> bytes:
    """The model converted with full-integer quantization (int8 in, int8 out)."""
    rng = np.random.default_rng(seed)
    shape = (1, *model.input_shape[1:])
    calibrate_batch_norm(model, rng.standard_normal((32, *shape[1:])).astype(np.float32))

    def representative() -> object:
        for _ in range(32):
            yield [rng.standard_normal(shape).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return bytes(converter.convert())


def while_loop() -> bytes:
    """A model of several subgraphs: a WHILE whose condition and body are subgraphs."""

    @tf.function(input_signature=[tf.TensorSpec((1, 8), tf.float32), tf.TensorSpec((), tf.int32)])
    def loop(x: tf.Tensor, n: tf.Tensor) -> tf.Tensor:
        _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 2.0), (0, x))
        return y

    function = loop.get_concrete_function()
    return bytes(tf.lite.TFLiteConverter.from_concrete_functions([function], loop).convert())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/tflite", help="directory to write into")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(args.models.split(",")):
        tf.keras.utils.set_random_seed(seed)
        data = int8_tflite(MODELS[name](), seed)
        (out / f"{name}.tflite").write_bytes(data)
        print(f"{name}: {len(data)} bytes")
    (out / "while_loop.tflite").write_bytes(while_loop())


if __name__ == "__main__":
    main()
