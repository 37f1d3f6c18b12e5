"""A Hessian from tape.jacobian of a gradient, and one Newton step (TF advanced guide:
"Example: Hessian"). Writes tape_hessian.png when matplotlib is installed."""

import numpy as np

import s2sgrad as sg

x = np.random.default_rng(0).normal(size=(7, 5))
layer1 = sg.nn.Dense(8, activation=sg.nn.relu, seed=1)
layer2 = sg.nn.Dense(6, activation=sg.nn.relu, seed=2)
with sg.GradientTape() as t2:
    with sg.GradientTape() as t1:
        h = layer1(x)
        h = layer2(h)
        loss = np.mean(h**2)
    g = t1.gradient(loss, layer1.kernel)
h = t2.jacobian(g, layer1.kernel)
print(f"layer.kernel.shape: {layer1.kernel.shape}")
print(f"h.shape: {h.shape}")

n_params = int(np.prod(layer1.kernel.shape))
g_vec = np.reshape(g, [n_params, 1])
h_mat = np.reshape(h, [n_params, n_params])
print("symmetric:", bool(np.allclose(h_mat, h_mat.T)))

eps = 1e-3
eye_eps = np.eye(h_mat.shape[0]) * eps
update = np.linalg.solve(h_mat + eye_eps, g_vec)  # X(k+1) = X(k) - H^-1 @ g
before = float(loss)
layer1.kernel.assign_sub(np.reshape(update, layer1.kernel.shape))
after = float(np.mean(layer2(layer1(x)) ** 2))
print(f"loss before the Newton step: {before:.6f}, after: {after:.6f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("(matplotlib not installed: no plot)")
else:
    lim = np.max(np.abs(h_mat))
    plt.imshow(h_mat, vmin=-lim, vmax=lim, cmap="seismic")
    plt.colorbar()
    plt.savefig("tape_hessian.png")
    print("wrote tape_hessian.png")
