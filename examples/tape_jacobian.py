"""Jacobians with tape.jacobian (TF advanced guide: "Jacobians")."""

import numpy as np

import s2sgrad as sg

x = np.linspace(-10.0, 10.0, 200 + 1)
delta = sg.Variable(0.0)
with sg.GradientTape() as tape:
    y = sg.nn.sigmoid(x + delta)
dy_dx = tape.jacobian(y, delta)
print(y.shape)
print(dy_dx.shape)

x = np.random.default_rng(0).normal(size=(7, 5))
layer = sg.nn.Dense(10, activation=sg.nn.relu, seed=0)
with sg.GradientTape(persistent=True) as tape:
    y = layer(x)
print(y.shape)
print(layer.kernel.shape)
j = tape.jacobian(y, layer.kernel)
print(j.shape)
g = tape.gradient(y, layer.kernel)
print("g.shape:", g.shape)
j_sum = np.sum(j, axis=(0, 1))
delta = float(np.max(np.abs(g - j_sum)))
assert delta < 1e-3
print("delta:", delta)
