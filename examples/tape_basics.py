"""Gradients of scalars and of tensors with sg.GradientTape (TF guide: "Computing gradients")."""

import numpy as np

import s2sgrad as sg

x = sg.Variable(3.0)
with sg.GradientTape() as tape:
    y = x**2
dy_dx = tape.gradient(y, x)  # dy = 2x * dx
print("dy/dx:", dy_dx.numpy())

w = sg.Variable(np.random.default_rng(0).normal(size=(3, 2)), name="w")
b = sg.Variable(np.zeros(2), name="b")
x = [[1.0, 2.0, 3.0]]
with sg.GradientTape(persistent=True) as tape:
    y = x @ w + b
    loss = np.mean(y**2)
dl_dw, dl_db = tape.gradient(loss, [w, b])
print(w.shape, dl_dw.shape)
grad = tape.gradient(loss, {"w": w, "b": b})
print("dl/db:", grad["b"].numpy())
print("\nThe compiled backward code of the last gradient call:\n")
print(sg.source(tape))
