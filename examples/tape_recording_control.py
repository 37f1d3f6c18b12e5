"""stop_recording, reset and stop_gradient (TF advanced guide: "Controlling gradient recording")."""

import s2sgrad as sg

x = sg.Variable(2.0)
y = sg.Variable(3.0)
with sg.GradientTape() as t:
    x_sq = x * x
    with t.stop_recording():
        y_sq = y * y
    z = x_sq + y_sq
grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])  # 2*x => 4
print("dz/dy:", grad["y"])

reset = True
with sg.GradientTape() as t:
    y_sq = y * y
    if reset:
        t.reset()  # throw out everything recorded so far
    z = x * x + y_sq
grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])
print("dz/dy:", grad["y"])

with sg.GradientTape() as t:
    y_sq = y**2
    z = x**2 + sg.stop_gradient(y_sq)
grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])
print("dz/dy:", grad["y"])
