"""`scipy.optimize.minimize` with derivatives from s2sgrad: `jac`, `hess` and `hessp`.

The Rosenbrock function written as a loop over its coordinates, the way it is defined on
paper. s2sgrad generates its gradient (`jac=`), its Hessian (`hess=`, forward mode over the
generated gradient) and Hessian-vector products (`hessp=`, without forming the Hessian), and
SciPy's Newton-type methods use them. Run: ``python examples/scipy_optimize.py``.
"""

import numpy as np
from scipy.optimize import minimize

import s2sgrad as sg


def rosenbrock(x):
    total = 0.0
    for i in range(len(x) - 1):
        total += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])  # the start point of SciPy's tutorial

# first derivatives only: BFGS builds its own Hessian approximation from the gradients
jac = sg.grad(rosenbrock)
bfgs = minimize(rosenbrock, x0, jac=jac, method="BFGS")

# exact Hessians: Newton's method with a trust region
hess = sg.hessian(rosenbrock)
newton = minimize(rosenbrock, x0, jac=jac, hess=hess, method="trust-exact")

# Hessian-vector products (hessp(x, p) = H(x) @ p): Newton-CG never forms H, which is what
# scales to many parameters. sg.hvp(f) takes f's arguments, then the direction.
hvp = sg.hvp(rosenbrock)
newton_cg = minimize(
    rosenbrock, x0, jac=jac, hessp=hvp, method="Newton-CG", options={"xtol": 1e-10}
)

for name, result in [("BFGS", bfgs), ("trust-exact", newton), ("Newton-CG", newton_cg)]:
    print(f"{name:12s} x = {np.round(result.x, 6)}  f = {result.fun:.2e}  iterations {result.nit}")
    assert result.success and np.allclose(result.x, 1.0, atol=1e-4), result

# the derivatives agree with finite differences (and with each other: hvp is hess @ p)
sg.check_grads(rosenbrock, (x0,), order=2)
p = np.arange(5.0)
np.testing.assert_allclose(hvp(x0, p), hess(x0) @ p, rtol=1e-12)
print("gradient, Hessian and Hessian-vector product checked")
