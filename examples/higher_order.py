"""Forward mode, Jacobians, Hessians and derivatives of derivatives, each checked by
sg.check_grads against finite differences."""

import numpy as np

import s2sgrad as sg

A = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 3.0]])


def energy(x):
    """A scalar function with loops and branches: a Hessian is its second derivative."""
    total = 0.5 * x @ A @ x
    for i in range(len(x)):
        if x[i] > 0:
            total = total + np.sin(x[i]) * x[i] ** 2
        else:
            total = total + x[i] ** 4
    return total


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


x = np.array([0.3, -0.8, 1.1])
value, slope = sg.jvp(energy, (x,), (np.array([1.0, 0.0, 0.0]),))
print("energy:", value, " d energy / d x0 (forward mode):", slope)
print("gradient (reverse mode):", sg.grad(energy)(x))

hessian = sg.hessian(energy)(x)
print("Hessian (forward over reverse):\n", hessian)
print("symmetric:", np.allclose(hessian, hessian.T))
step = np.linalg.solve(hessian, sg.grad(energy)(x))
print("one Newton step:", x - step)
print("Hessian-vector product equals H @ v:", np.allclose(sg.hvp(energy)(x, x), hessian @ x))

print("Jacobian of an elementwise function (its diagonal only is computed):")
print(sg.jacobian(sigmoid)(x))


def smooth_energy(x):
    return np.sum(np.sin(x) * x**2) + 0.5 * x @ A @ x


# the generated Hessian: the elementwise part's tangent stays a diagonal added onto the
# quadratic part's (A + A.T) / 2, no identity matrix is pushed through a product
smooth_hessian = sg.hessian(smooth_energy)
print(sg.source(smooth_hessian, x))
closed = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x * x * np.sin(x)) + 0.5 * (A + A.T)
print("equals the closed form:", np.allclose(smooth_hessian(x), closed))


def wave(t):
    return np.sin(t) * t**2


d1 = sg.grad(wave)
d2 = sg.grad(d1)  # the generated gradient, transformed again
d3 = sg.grad(d2)
t = 0.7
print(
    "third derivative:",
    d3(t),
    " closed form:",
    6 * np.cos(t) - 6 * t * np.sin(t) - t * t * np.cos(t),
)
print(sg.source(d2, t))

sg.check_grads(energy, (x,), order=2)  # raises AssertionError on a mismatch
sg.check_grads(sigmoid, (x,), order=2, modes=("forward", "reverse"))
print("check_grads: first and second derivatives agree with finite differences")
