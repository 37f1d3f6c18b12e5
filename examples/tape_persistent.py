"""A persistent tape answers several gradient calls (TF guide: "persistent=True")."""

import s2sgrad as sg

x = sg.constant([1, 3.0])
with sg.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = x * x
    z = y * y
print(tape.gradient(z, x).numpy())  # [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
print(tape.gradient(y, x).numpy())  # [2.0, 6.0] (2 * x at x = [1.0, 3.0])
del tape

x = sg.Variable(2.0)
with sg.GradientTape() as tape:
    y = x * x
tape.gradient(y, x)
try:
    tape.gradient(y, x)
except RuntimeError as error:
    print("non-persistent tape, second call:", type(error).__name__)
