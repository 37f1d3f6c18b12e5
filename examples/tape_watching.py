"""Controlling what the tape watches (TF guide: "Controlling what the tape watches")."""

import numpy as np

import s2sgrad as sg

x0 = sg.Variable(3.0, name="x0")  # a trainable variable
x1 = sg.Variable(3.0, name="x1", trainable=False)  # not trainable
x2 = sg.Variable(2.0, name="x2") + 1.0  # not a Variable: Variable + number is a Tensor
x3 = sg.constant(3.0, name="x3")  # not a Variable
with sg.GradientTape() as tape:
    y = (x0**2) + (x1**2) + (x2**2)
for g in tape.gradient(y, [x0, x1, x2, x3]):
    print(g)
print([var.name for var in tape.watched_variables()])

x = sg.constant(3.0)
with sg.GradientTape() as tape:
    tape.watch(x)
    y = x**2
print(tape.gradient(y, x).numpy())  # dy = 2x * dx

x0 = sg.Variable(0.0)
x1 = sg.Variable(10.0)
with sg.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(x1)
    y0 = np.sin(x0)
    y1 = sg.nn.softplus(x1)
    y = y0 + y1
    ys = np.sum(y)
grad = tape.gradient(ys, {"x0": x0, "x1": x1})  # dys/dx1 = sigmoid(x1)
print("dy/dx0:", grad["x0"])
print("dy/dx1:", grad["x1"].numpy())
