"""Gradients with respect to a model's variables (TF guide: "Gradients with respect to a model")."""

import numpy as np

import s2sgrad as sg

layer = sg.nn.Dense(2, activation="relu", seed=0)
x = sg.constant([[1.0, 2.0, 3.0]])
with sg.GradientTape() as tape:
    y = layer(x)  # forward pass
    loss = np.mean(y**2)
grad = tape.gradient(loss, layer.trainable_variables)
for var, g in zip(layer.trainable_variables, grad, strict=True):
    print(f"{var.name}, shape: {g.shape}")
