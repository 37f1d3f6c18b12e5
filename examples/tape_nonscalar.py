"""Gradients of non-scalar targets (TF guide: "Gradients of non-scalar targets").

Writes tape_sigmoid.png (the sigmoid and its derivative) when matplotlib is installed.
"""

import numpy as np

import s2sgrad as sg

x = sg.Variable(2.0)
with sg.GradientTape(persistent=True) as tape:
    y0 = x**2
    y1 = 1 / x
print(tape.gradient(y0, x).numpy())
print(tape.gradient(y1, x).numpy())

x = sg.Variable(2.0)
with sg.GradientTape() as tape:
    y0 = x**2
    y1 = 1 / x
print(tape.gradient({"y0": y0, "y1": y1}, x).numpy())  # the sum of the targets' gradients

x = sg.Variable(2.0)
with sg.GradientTape() as tape:
    y = x * [3.0, 4.0]
print(tape.gradient(y, x).numpy())  # the gradient of the sum

x = sg.constant(np.linspace(-10.0, 10.0, 200 + 1))
with sg.GradientTape() as tape:
    tape.watch(x)
    y = sg.nn.sigmoid(x)
dy_dx = tape.gradient(y, x)
print("max dy/dx:", float(np.max(dy_dx)))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("(matplotlib not installed: no plot)")
else:
    plt.plot(x.numpy(), y.numpy(), label="y")
    plt.plot(x.numpy(), dy_dx.numpy(), label="dy/dx")
    plt.legend()
    plt.xlabel("x")
    plt.savefig("tape_sigmoid.png")
    print("wrote tape_sigmoid.png")
