"""Gradients with respect to intermediate results (TF guide: "Intermediate results")."""

import s2sgrad as sg

x = sg.constant(3.0)
with sg.GradientTape() as tape:
    tape.watch(x)
    y = x * x
    z = y * y
print(tape.gradient(z, y).numpy())  # dz/dy = 2 * y, y = x ** 2 = 9
