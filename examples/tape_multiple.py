"""Several tapes at once, each with its own watched values (TF advanced guide: "Multiple tapes")."""

import numpy as np

import s2sgrad as sg

x0 = sg.constant(0.0)
x1 = sg.constant(0.0)
with sg.GradientTape() as tape0, sg.GradientTape() as tape1:
    tape0.watch(x0)
    tape1.watch(x1)
    y0 = np.sin(x0)
    y1 = sg.nn.sigmoid(x1)
    y = y0 + y1
    ys = np.sum(y)
print(tape0.gradient(ys, x0).numpy())  # cos(x) => 1.0
print(tape1.gradient(ys, x1).numpy())  # sigmoid(x1)*(1-sigmoid(x1)) => 0.25
