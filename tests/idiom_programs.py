"""Programs written the way tutorials write them (issue 18): parameters in an object, lambdas
closing over data, partials, loops over lists of (W, b) pairs and over dict views, context
managers that carry no derivative. Used by tests/test_callables.py and tests/test_idioms.py."""

import functools
import warnings

import numpy as np

RNG = np.random.default_rng(18)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=6)


def squared_error(w, X, y):
    return np.sum((X @ w - y) ** 2)


def scaled(w, scale, offset=0.5):
    return np.sum(np.sin(w) * scale) + offset * np.sum(w**2)


class LinearModel:
    """Parameters and data held in an object; the loss is a method calling another."""

    def __init__(self, X, y, penalty=0.1):
        self.X = X
        self.y = y
        self.penalty = penalty

    def predict(self, w):
        return np.tanh(self.X @ w)

    def loss(self, w):
        residual = self.predict(w) - self.y
        return np.mean(residual**2) + self.penalty * self.norm(w)

    def norm(self, w):
        return np.sum(w**2)

    @staticmethod
    def softplus(w):
        return np.sum(np.log1p(np.exp(w)))

    @classmethod
    def cubic(cls, w):
        return np.sum(w**3) / 3.0

    def __call__(self, w):
        return self.loss(w)


class Quadratic:
    """A callable object: `sg.grad(q)` differentiates its `__call__`."""

    def __init__(self, A):
        self.A = A

    def __call__(self, x):
        return 0.5 * x @ self.A @ x + np.sum(np.cos(x))


MODEL = LinearModel(X, Y)
QUADRATIC = Quadratic(np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]]))
LOSS_OF_W = lambda w: squared_error(w, X, Y)  # noqa: E731  (a lambda, as users write it)
PARTIAL_LOSS = functools.partial(squared_error, X=X, y=Y)
PARTIAL_POSITIONAL = functools.partial(scaled, offset=2.0)
PARTIAL_METHOD = functools.partial(MODEL.loss)


def decayed(w, *, rate):
    return np.sum(np.exp(-rate * w) * w**2)


# a keyword-only parameter fixed, leaving a bare * (once a CSTValidationError from libcst)
PARTIAL_KEYWORD_ONLY = functools.partial(decayed, rate=0.7)
SQUARE = lambda t: t * t  # noqa: E731
CUBE = lambda t: t * t * t  # noqa: E731


def calls_two_lambdas(x):
    return np.sum(SQUARE(x) + CUBE(x))


def calls_a_method(w):
    return MODEL.loss(w) + QUADRATIC(w)


def local_lambda(x):
    sq = lambda t: t * t + 1.0  # noqa: E731
    return np.sum(sq(x) * sq(2.0 * x))


def mapped_lambda(ws):
    return sum(map(lambda w: np.sum(w**2), ws))


def mapped_function(ws):
    return sum(map(np.sum, ws))


def sorted_by_lambda(x):
    order = sorted(range(len(x)), key=lambda i: x[i])
    return x[order[0]] * 2.0 + np.sum(x**2)


def max_by_key(a, b):
    return max(a, b, key=lambda v: -v)


# -- loops and containers ---------------------------------------------------------------------


def mlp_pairs(params, x):
    for W, b in params:
        x = np.tanh(W @ x + b)
    return np.sum(x**2)


def mlp_layers(params, x):
    for layer in params:
        W, b = layer
        x = np.tanh(W @ x + b)
    return np.sum(x**2)


def over_items(params):
    total = 0.0
    for name, value in params.items():
        total = total + np.sum(value**2) * len(name)
    return total


def over_values(params):
    total = 0.0
    for value in params.values():
        total = total + np.sum(np.sin(value))
    return total


def over_keys(params):
    total = 0.0
    for key in params.keys():
        total = total + np.sum(params[key] ** 3)
    return total


def l2_of_values(params):
    return sum(np.sum(w**2) for w in params.values())


def comprehension_of_items(params):
    return sum([np.sum(v * 2.0) * len(k) for k, v in params.items()])


def enumerate_zip(a, b):
    total = 0.0
    for i, (x, y) in enumerate(zip(a, b)):  # noqa: B905  (as users write it)
        total = total + (i + 1.0) * x * y
    return total


def over_list_literal(a, b, c):
    total = 0.0
    for t in [a, b, c]:
        total = total + np.sum(t**2)
    return total


def unpack_exp(log_theta):
    ell, sf, sn = np.exp(log_theta)
    return ell * sf + sn**2


def unpack_rows(A):
    first, second = A
    return np.sum(first * second)


# -- numerical idioms -------------------------------------------------------------------------


def euler(v, a, dt=0.1):
    x = 0.0
    for _ in range(4):
        v += dt * a
        x += dt * v
    return x * v


def with_errstate(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x)
    return np.sum(y * x)


def with_catch_warnings(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.sqrt(x)
    return np.sum(y)


def with_printoptions(x):
    with np.printoptions(precision=3):
        y = np.sin(x)
    return np.sum(y * y)


def isinstance_of_tree(p):
    if isinstance(p, dict):
        return np.sum(p["a"] ** 2)
    return np.sum(p**2)


def range_of_len(ps):
    total = 0.0
    for i in range(len(ps)):
        total = total + np.sum(ps[i] ** 2)
    return total


def with_as(x):
    with warnings.catch_warnings(record=True) as caught:
        y = np.sin(x) + len(caught)
    return np.sum(y)


def with_unknown_manager(x):
    with open("/dev/null"):
        y = np.sin(x)
    return np.sum(y)


def class_inside(x):
    class Inner:
        pass

    return np.sum(x)


# -- comprehensions, starred unpacking and argument spreading ------------------------------
def dict_comprehension(w):
    scaled_ = {name: w * k for k, name in enumerate(["a", "b", "c"], 1) if k != 2}
    return np.sum(scaled_["a"] * scaled_["c"])


def set_comprehension_of_sizes(w):
    sizes = {len(v) for v in [w, w[:2], w]}
    return np.sum(w**2) * len(sizes)


def nested_comprehension(w):
    products = [w[i] * w[j] for i in range(len(w)) for j in range(i) if j != 1]
    return sum(products)


def nested_list_of_lists(W):
    grid = [[np.sin(v) for v in row] for row in W]
    return sum(sum(row) for row in grid)


def first_and_rest(w):
    first, *rest = w
    return first * sum(r**2 for r in rest)


def head_middle_tail(ps):
    head, *middle, tail = ps
    return np.sum(head * tail) + sum(np.sum(m**2) for m in middle) * len(middle)


def loop_over_starred_rows(W):
    total = 0.0
    for first, *rest in W:
        total = total + first * sum(rest)
    return total


def list_of_an_array(w):
    items = list(w)
    items.append(w[0] ** 2)
    return sum(v * v for v in items)


def list_of_zip(w):
    pairs = list(zip(w, np.cos(w), strict=True))
    return sum(a * b for a, b in pairs)


def loop_over_zip_items(w):
    total = 0.0
    for pair in zip(w, w[::-1], strict=True):
        total = total + pair[0] * np.exp(pair[1])
    return total


def _affine(a, b, c):
    return a * b + np.sin(c)


def _scaled_sum(a, b, scale=2.0):
    return scale * np.sum(a * b)


def spread_a_tuple(w):
    args = (w, w**2, 0.5)
    return np.sum(_affine(*args))


def spread_the_rest(w):
    rest = [np.cos(w), w]
    return np.sum(_affine(w, *rest))


def spread_literals(w):
    return _scaled_sum(*(w, w + 1.0), **{"scale": w[0]})


def columns_of_pairs(w):
    pairs = [(w[0], 1.0), (w[1] * 2.0, 3.0), (w[2], w[0])]
    left, right = zip(*pairs, strict=True)
    return sum(left) * sum(right) + left[0] * right[2]


def spread_with_defaults(w, args):
    return _scaled_sum(*args)


def set_of_values(w):
    values = {v * 2.0 for v in w}
    return sum(values)


def dict_comprehension_of_items(p):
    doubled = {k: v * 2.0 for k, v in p.items()}
    return np.sum(doubled["w"] * doubled["bias"][0]) + doubled["s"] ** 2


def dict_built_from_items_in_a_loop(p):
    scaled_ = {}
    for k, v in p.items():
        scaled_[k] = np.tanh(v)
    return sum(np.sum(v**2) for v in scaled_.values())


# -- *args and **kwargs in the functions called ---------------------------------------------
def _sum_of_squares(*xs):
    return sum(v * v for v in xs)


def _shifted(a, **opts):
    return a * opts["scale"] + np.sin(opts["shift"])


def _everything(a, b=2.0, *rest, c=1.0, **more):
    total = a * b * c
    for r in rest:
        total = total + r**2
    for k, v in more.items():
        total = total + v * len(k)
    return total


def calls_varargs(w):
    return np.sum(_sum_of_squares(w, 2.0 * w, 3.0))


def calls_kwargs(w):
    return np.sum(_shifted(w, scale=3.0, shift=w) + _shifted(w, scale=w, shift=0.5))


def calls_every_kind_of_parameter(w):
    return np.sum(_everything(w, w, w * w, 3.0, c=w[0], m=np.exp(w), nn=2.0))


def spreads_into_varargs(w):
    parts = (w, np.cos(w))
    return np.sum(_sum_of_squares(*parts) + _everything(*parts, **{"c": 0.5, "z": w}))


def takes_varargs(*ws):
    return np.sum(ws[0])


def starred_in_a_list_literal(w):
    first, *rest = w
    items = [first * 2.0, *rest, *[np.sin(v) for v in w], first]
    only = [*rest]
    return sum(v * v for v in items) + only[0] * len(only)


def dict_get_with_defaults(p):
    scale = p.get("s", 1.0)
    missing = p.get("nothing", 2.0)
    return np.sum(p.get("w") * scale) + missing * np.sum(p["bias"] ** 2)


def _rebinds_its_number(a, b=0.5):
    a += 2.0 * b  # (a number: rebound, not changed for the caller)
    return a * a


def spreads_numbers_into_a_rebinding_callee(x):
    # the callee's number check knows a spread literal's items (refused before, as if
    # `a` could be an array; fuzz seed 801029)
    return _rebinds_its_number(*(x, 0.25)) + _rebinds_its_number(**{"a": x * x})


def _rebinds_its_second(a, b=0.5):
    b %= 2.0
    return a * b


def spreads_an_element_into_a_rebinding_callee(w):
    # the spread literal's items walked one by one: w[-3] of a vector is a number (refused
    # before, with the kind of the array beside it; fuzz seed 800391)
    return np.sum(_rebinds_its_second(*(w, w[-3])))
