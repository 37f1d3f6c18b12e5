"""GradientTape benchmarks: ``python -m benchmarks.tape [--quick]`` (also printed at the end of
``python -m benchmarks`` when every case runs).

Three measurements, each against plain NumPy measured in the same run:

- ``train_step``: one training step of a 2-layer Dense model (batch 32, 64 -> 64 -> 10, relu,
  mean squared error) under a tape, after the first step (which compiles), against a
  hand-written NumPy forward + backprop. Target: at most 2x. The hand-written step does not
  compute the loss value, which the tape step must (it is the target); the note also gives the
  ratio to a hand-written step that does (`hand_step_with_loss`, the same work). TensorFlow's
  eager GradientTape gets a column when TensorFlow is installed (target: s2sgrad faster).
- ``recording``: the overhead per recorded operation on small (4, 4) arrays: a chain of
  multiplications and additions under a tape, minus the same chain on plain ndarrays, per
  operation. Target: under 3 us. The Tensor wrapper's own cost without a tape is shown too.
- ``jacobian``: ``tape.jacobian`` of a Dense(10) output (7, 10) w.r.t. its kernel (5, 10)
  against ``tape.gradient`` of the same recording (both including the forward pass under the
  tape). Target: at most 5x.

Ratios and targets use medians; the note column adds the same measurement from the fastest
repeat of each timer (what the code costs when the machine is not busy elsewhere). Nothing here
asserts: these are numbers to read, not tests.
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import s2sgrad as sg

from .timing import Settings, format_time, interleaved, table_main, text_table

TRAIN_TARGET = 2.0
RECORD_TARGET = 3e-6
JACOBIAN_TARGET = 5.0
CHAIN = 50  # operations per recording measurement


def _model(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(32, 64))
    t = rng.normal(size=(32, 10))
    l1 = sg.nn.Dense(64, activation="relu", seed=seed)
    l2 = sg.nn.Dense(10, seed=seed + 1)
    l2(l1(x))  # build the variables
    return x, t, l1, l2


def tape_step(x, t, l1, l2, variables):
    with sg.GradientTape() as tape:
        loss = np.mean((l2(l1(x)) - t) ** 2)
    return tape.gradient(loss, variables)


def hand_step(x, t, w1, b1, w2, b2):
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    out = h @ w2 + b2
    d = 2.0 * (out - t) / out.size
    dh = d @ w2.T
    dz1 = dh * (z1 > 0)
    return x.T @ dz1, dz1.sum(axis=0), h.T @ d, d.sum(axis=0)


def hand_step_with_loss(x, t, w1, b1, w2, b2):
    """`hand_step` that also computes the loss value, as the tape step must (it is the tape's
    target): the same work as the tape step. Shown in the note; the target is `hand_step`."""
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    out = h @ w2 + b2
    r = out - t
    loss = np.mean(r**2)
    d = (2.0 / out.size) * r
    dh = d @ w2.T
    dz1 = dh * (z1 > 0)
    return loss, (x.T @ dz1, dz1.sum(axis=0), h.T @ d, d.sum(axis=0))


def _tensorflow_step():
    """TensorFlow's eager tape on the same model, or None when TensorFlow is not installed."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    x, t, l1, l2 = _model()
    ws = [tf.Variable(v.numpy()) for v in (*l1.trainable_variables, *l2.trainable_variables)]
    xt, tt = tf.constant(x), tf.constant(t)

    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(xt @ ws[0] + ws[1])
            loss = tf.reduce_mean((h @ ws[2] + ws[3] - tt) ** 2)
        return tape.gradient(loss, ws)

    return step


def train_step(settings: Settings) -> list[str]:
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    values = [v.numpy() for v in variables]
    ours = tape_step(x, t, l1, l2, variables)  # first step: compiles
    _, with_loss = hand_step_with_loss(x, t, *values)
    for g, h, h2 in zip(ours, hand_step(x, t, *values), with_loss, strict=True):
        np.testing.assert_allclose(g.numpy(), h, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(h2, h, rtol=1e-12, atol=1e-15)
    timers = [
        timeit.Timer(lambda: tape_step(x, t, l1, l2, variables)),
        timeit.Timer(lambda: hand_step(x, t, *values)),
        timeit.Timer(lambda: hand_step_with_loss(x, t, *values)),
    ]
    tf_step = _tensorflow_step()
    if tf_step is not None:
        tf_step()
        timers.append(timeit.Timer(tf_step))
    timings = interleaved(timers, settings.repeat, settings.seconds)
    ratio = timings[0].median / timings[1].median
    row = [
        "train_step",
        format_time(timings[0].median),
        format_time(timings[1].median),
        f"{ratio:.2f}x{'' if ratio <= TRAIN_TARGET else ' *'}",
        f"<= {TRAIN_TARGET:g}x",
    ]
    notes = [
        f"best {timings[0].best / timings[1].best:.2f}x",
        f"vs the step with its loss {timings[0].median / timings[2].median:.2f}x",
    ]
    if tf_step is not None:
        notes.append(f"TF eager {timings[3].median / timings[1].median:.1f}x")
    row.append(", ".join(notes))
    return row


def _chain(a, b):
    y = a
    for _ in range(CHAIN // 2):
        y = y * b + a
    return y


def recording(settings: Settings) -> list[str]:
    plain = np.full((4, 4), 0.5)
    a, b = sg.constant(plain), sg.constant(plain)

    def under_tape():
        with sg.GradientTape() as tape:
            tape.watch(a)
            _chain(a, b)

    timers = [
        timeit.Timer(under_tape),
        timeit.Timer(lambda: _chain(a, b)),
        timeit.Timer(lambda: _chain(plain, plain)),
    ]
    taped, tensors, numpy_ = interleaved(timers, settings.repeat, settings.seconds)
    per_op = (taped.median - numpy_.median) / CHAIN
    best = (taped.best - numpy_.best) / CHAIN
    wrapper = (tensors.median - numpy_.median) / CHAIN
    return [
        "recording (per op)",
        format_time(taped.median / CHAIN),
        format_time(numpy_.median / CHAIN),
        f"+{format_time(per_op)}{'' if per_op < RECORD_TARGET else ' *'}",
        f"< {RECORD_TARGET * 1e6:g} us",
        f"best +{format_time(best)}; Tensor without tape +{format_time(wrapper)}",
    ]


def jacobian(settings: Settings) -> list[str]:
    x = np.random.default_rng(1).normal(size=(7, 5))
    layer = sg.nn.Dense(10, activation=sg.nn.relu, seed=0)
    layer(x)

    def run(jac: bool):
        with sg.GradientTape() as tape:
            y = layer(x)
        return tape.jacobian(y, layer.kernel) if jac else tape.gradient(y, layer.kernel)

    assert run(True).shape == (7, 10, 5, 10)
    run(False)
    timings = interleaved(
        [timeit.Timer(lambda: run(True)), timeit.Timer(lambda: run(False))],
        settings.repeat,
        settings.seconds,
    )
    ratio = timings[0].median / timings[1].median
    return [
        "jacobian (7,10)x(5,10)",
        format_time(timings[0].median),
        format_time(timings[1].median),
        f"{ratio:.2f}x{'' if ratio <= JACOBIAN_TARGET else ' *'}",
        f"<= {JACOBIAN_TARGET:g}x",
        "vs one tape.gradient" if hasattr(sg, "jacobian") else "sg.jacobian missing: rows",
    ]


def table(settings: Settings) -> str:
    """The GradientTape table (each row: case, s2sgrad, reference, ratio, target, note)."""
    rows = [train_step(settings), recording(settings), jacobian(settings)]
    header = ["tape case", "s2sgrad", "reference", "ratio / extra", "target", "note"]
    footnote = (
        "* marks a miss; references: hand-written NumPy step, plain NumPy ops, one "
        "tape.gradient"
    )
    return text_table(header, rows, footnote)


def main(argv=None) -> int:
    return table_main("python -m benchmarks.tape", __doc__, table, argv)


if __name__ == "__main__":
    sys.exit(main())
