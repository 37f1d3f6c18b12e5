"""Per-example Jacobians with tape.batch_jacobian (TF advanced guide: "Batch Jacobian").
Writes tape_batch_jacobian.png (the (batch, batch) patches) when matplotlib is installed."""

import numpy as np

import s2sgrad as sg

x = sg.constant(np.random.default_rng(0).normal(size=(7, 5)))
layer1 = sg.nn.Dense(8, activation=sg.nn.elu, seed=1)
layer2 = sg.nn.Dense(6, activation=sg.nn.elu, seed=2)
with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer1(x)
    y = layer2(y)
print(y.shape)
j = tape.jacobian(y, x)
print(j.shape)
j_sum = np.sum(j, axis=2)
print(j_sum.shape)
j_select = np.einsum("bxby->bxy", j.numpy())
print(j_select.shape)
jb = tape.batch_jacobian(y, x)
print(jb.shape)
error = float(np.max(np.abs(jb - j_sum)))
assert error < 1e-3
print(error)


def as_patches(jac):
    """Reorder the axes so that each (batch, batch) diagonal is a contiguous patch."""
    jac = np.transpose(jac, [1, 0, 3, 2])
    lim = np.max(np.abs(jac))
    jac = np.pad(jac, [[0, 0], [1, 1], [0, 0], [1, 1]], constant_values=-lim)
    s = jac.shape
    return np.reshape(jac, [s[0] * s[1], s[2] * s[3]]), lim


bn = sg.nn.BatchNormalization()
with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer2(bn(layer1(x), training=True))
j_bn = tape.jacobian(y, x)
print(f"j.shape: {j_bn.shape}")
print(f"jb.shape: {tape.batch_jacobian(y, x).shape}")  # runs, but means little here

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("(matplotlib not installed: no plot)")
else:
    image, lim = as_patches(j.numpy())
    plt.imshow(image, vmin=-lim, vmax=lim, cmap="seismic")
    plt.title("All (batch, batch) slices are diagonal")
    plt.savefig("tape_batch_jacobian.png")
    print("wrote tape_batch_jacobian.png")
