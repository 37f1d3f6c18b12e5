"""Second derivatives with nested tapes, and input-gradient regularization
(TF advanced guide: "Higher-order gradients")."""

import numpy as np

import s2sgrad as sg

x = sg.Variable(1.0)
with sg.GradientTape() as t2:
    with sg.GradientTape() as t1:
        y = x * x * x
    # computed inside t2, so t2 records the gradient computation itself
    dy_dx = t1.gradient(y, x)
d2y_dx2 = t2.gradient(dy_dx, x)
print("dy_dx:", dy_dx.numpy())  # 3 * x**2 => 3.0
print("d2y_dx2:", d2y_dx2.numpy())  # 6 * x => 6.0

x = sg.constant(np.random.default_rng(0).normal(size=(7, 5)))
layer = sg.nn.Dense(10, activation=sg.nn.relu, seed=0)
with sg.GradientTape() as t2:
    # the inner tape only takes the gradient with respect to the input
    with sg.GradientTape(watch_accessed_variables=False) as t1:
        t1.watch(x)
        y = layer(x)
        out = np.sum(layer(x) ** 2)
    g1 = t1.gradient(out, x)  # 1. the input gradient
    g1_mag = np.linalg.norm(g1)  # 2. its magnitude
dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)  # 3. its gradient w.r.t. the model
print([var.shape for var in dg1_mag])
