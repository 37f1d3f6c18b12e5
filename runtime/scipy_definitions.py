"""SciPy functions differentiated through definitions (see `runtime/definitions.py`):
the multivariate distributions of `scipy.stats`, built from NumPy's linear algebra and
`scipy.special.gammaln`, which all have rules. Imported by `runtime/rules/scipy_stats.py`,
so only when a program uses `scipy.stats`.

`multivariate_normal` takes `mean` (None, a number or a vector) and `cov` (a number, a vector
of variances or a matrix; a matrix is read through its Cholesky factor, so from its lower
triangle, as SciPy reads it) with SciPy's rules for the dimension; ``allow_singular=True`` is
not supported. `dirichlet` takes `x` with the components along the first axis, as SciPy does.
"""

from __future__ import annotations

import numpy as np
import scipy.special
import scipy.stats

from .definitions import define

_LOG_2PI = float(np.log(2.0 * np.pi))


def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.logpdf`` (in `x`, `mean` and `cov`)."""
    if allow_singular:
        raise NotImplementedError(
            "s2sgrad differentiates scipy.stats.multivariate_normal with allow_singular=False"
        )
    if mean is not None and np.ndim(mean) > 0:
        dim = np.shape(mean)[-1]
    elif np.ndim(cov) > 0:
        dim = np.shape(cov)[-1]
    else:
        dim = 1
    points = np.expand_dims(x, -1) if dim == 1 and np.shape(x)[-1:] != (1,) else x
    centered = points if mean is None else points - mean
    if np.ndim(cov) < 2:
        variances = cov * np.ones(dim)
        quadratic = np.sum(centered**2 / variances, axis=-1)
        log_det = np.sum(np.log(variances))
    else:
        factor = np.linalg.cholesky(cov)
        rows = np.reshape(centered, (-1, dim))
        solved = np.linalg.solve(factor, rows.T)
        quadratic = np.reshape(np.sum(solved**2, axis=0), np.shape(centered)[:-1])
        log_det = 2.0 * np.sum(np.log(np.diagonal(factor)))
    return -0.5 * (dim * _LOG_2PI + log_det + quadratic)


def multivariate_normal_pdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.pdf``."""
    return np.exp(multivariate_normal_logpdf(x, mean, cov, allow_singular))


def dirichlet_logpdf(x, alpha):
    """``scipy.stats.dirichlet.logpdf`` (in `x` and `alpha`; components along x's first
    axis)."""
    weights = np.reshape(alpha, (-1,) + (1,) * (np.ndim(x) - 1))
    normalizer = scipy.special.gammaln(np.sum(alpha)) - np.sum(scipy.special.gammaln(alpha))
    return normalizer + np.sum((weights - 1.0) * np.log(x), axis=0)


def dirichlet_pdf(x, alpha):
    """``scipy.stats.dirichlet.pdf``."""
    return np.exp(dirichlet_logpdf(x, alpha))


define(scipy.stats.multivariate_normal.logpdf, multivariate_normal_logpdf)
define(scipy.stats.multivariate_normal.pdf, multivariate_normal_pdf)
define(scipy.stats.dirichlet.logpdf, dirichlet_logpdf)
define(scipy.stats.dirichlet.pdf, dirichlet_pdf)
