"""Every case where gradient() returns None (TF guide: "Cases where gradient returns None"),
and zeros instead of None."""

import warnings

import numpy as np

import s2sgrad as sg

x = sg.Variable(2.0)
y = sg.Variable(3.0)
with sg.GradientTape() as tape:
    z = y * y
print("unconnected:", tape.gradient(z, x))

x = sg.Variable(2.0)
for _ in range(2):
    with sg.GradientTape() as tape:
        y = x + 1
    print(type(x).__name__, ":", tape.gradient(y, x))
    x = x + 1  # this should be x.assign_add(1)

x = sg.Variable([[1.0, 2.0], [3.0, 4.0]])
with sg.GradientTape() as tape:
    x2 = x**2
    y = np.mean(np.asarray(x2), axis=0)  # this step leaves the tape through NumPy
    y = np.mean(sg.constant(y), axis=0)
print("left through NumPy:", tape.gradient(y, x))

x = sg.constant(10)
with sg.GradientTape() as g:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g.watch(x)
    print("warning:", caught[0].message)
    y = x * x
print("integer:", g.gradient(y, x))

x0 = sg.Variable(3.0)
x1 = sg.Variable(0.0)
with sg.GradientTape() as tape:
    x1.assign_add(x0)  # stateful: the tape starts from x1's new value
    y = x1**2
print("through assign_add:", tape.gradient(y, x0))

image = sg.Variable([[[0.5, 0.0, 0.0]]])
with sg.GradientTape() as tape:
    new_image = np.unwrap(image)  # a NumPy function with no rule
try:
    print(tape.gradient(new_image, image))
except LookupError as e:
    print(f"{type(e).__name__}: {e}")

x = sg.Variable([2.0, 2.0])
y = sg.Variable(3.0)
with sg.GradientTape() as tape:
    z = y**2
print(tape.gradient(z, x, unconnected_gradients=sg.UnconnectedGradients.ZERO))
