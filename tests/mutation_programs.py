"""Functions that change arrays and lists in place. The ones that normal form cannot follow
must be refused with a TransformError at the line marked ``# REJECT``; the others must give
the right derivative (tests/test_mutation.py)."""

import random

import numpy as np

GLOBAL_WEIGHTS = np.array([1.0, 2.0, 3.0])


# -- refused: the argument (or a global) would change --------------------------------------


def fill_argument(x):
    x.fill(3.0)  # REJECT
    return np.sum(x)


def sort_argument(x):
    x.sort()  # REJECT
    return np.sum(x * np.arange(3.0))


def put_argument(x):
    np.put(x, [0], 5.0)  # REJECT
    return np.sum(x * x)


def out_argument(x):
    np.multiply(x, 2, out=x)  # REJECT out=
    return np.sum(x * x)


def positional_out(x):
    np.multiply(x, 2.0, x)  # REJECT x)
    return np.sum(x * x)


def add_at_argument(x):
    np.add.at(x, [0, 0], 1.0)  # REJECT
    return np.sum(x * x)


def asarray_alias_update(x):
    a = np.asarray(x)
    a *= 3  # REJECT
    return np.sum(a * x)


def alias_item_write(x):
    a = x
    a[0] = 1.0  # REJECT
    return np.sum(a * x)


def reshape_alias_update(x):
    a = x.reshape(-1)
    a *= 2.0  # REJECT
    return np.sum(x * x)


def transpose_alias_update(x):
    a = x.T
    a *= 2.0  # REJECT
    return np.sum(x * x)


def ellipsis_alias_update(x):
    a = x[...]
    a *= 2.0  # REJECT
    return np.sum(x * x)


def element_of_list_argument(xs):
    first = xs[0]
    first[0] = 0.0  # REJECT
    return np.sum(first)


def global_item_write(x):
    GLOBAL_WEIGHTS[0] = 0.0  # REJECT
    return np.sum(GLOBAL_WEIGHTS * x)


def global_method(x):
    GLOBAL_WEIGHTS.sort()  # REJECT
    return np.sum(GLOBAL_WEIGHTS * x)


# -- refused: a local array changes behind another name -------------------------------------


def fill_through_copy_name(x):
    row = x * 1.0
    b = row
    b.fill(3.0)  # REJECT
    return np.sum(row)


def normalize_rows_through_view(x):
    p = x * 1.0
    for i in range(p.shape[0]):
        row = p[i]
        row /= row.sum()  # REJECT
    return np.sum(p * p)


def write_through_slice_view(x):
    p = x * 1.0
    v = p[1:]
    v[0] = 7.0  # REJECT
    return np.sum(p * x)


def update_through_alias(x):
    p = x * 1.0
    q = p
    q *= 2.0  # REJECT
    return np.sum(p * x)


def update_through_asarray(x):
    p = x * 1.0
    a = np.asarray(p)
    a *= 3.0  # REJECT
    return np.sum(p)


def update_item_of_list(x):
    p = x * 1.0
    items = [p]
    items[0] *= 2.0  # REJECT
    return np.sum(p)


def write_through_ravel(x):
    p = x * 1.0
    a = p.ravel()
    a[0] = 0.0  # REJECT
    return np.sum(p * x)


def append_through_alias(x):
    items = [x]
    other = items
    other.append(x * 2.0)  # REJECT
    return np.sum(items[-1])


def nested_function_writes_argument(x):
    p = x * 1.0

    def zero_first(v):
        v[0] = 0.0  # REJECT
        return v

    r = zero_first(p)
    return np.sum(p * x) + np.sum(r)


def local_out(x):
    p = x * 1.0
    q = np.empty(3)
    np.multiply(p, x, out=q)  # REJECT out=
    return np.sum(q)


def local_copyto(x):
    p = x * 1.0
    np.copyto(p, 2.0)  # REJECT
    return np.sum(p * x)


def local_resize(x):
    p = x * 1.0
    p.resize(2, refcheck=False)  # REJECT
    return np.sum(p)


def local_partition(x):
    p = x * 1.0
    p.partition(1)  # REJECT
    return np.sum(p * np.arange(3.0))


def local_setitem_method(x):
    p = x * 1.0
    p.__setitem__(0, 4.0)  # REJECT
    return np.sum(p * x)


def local_in_place_operator_method(x):
    p = x * 1.0
    p.__imul__(2.0)  # REJECT
    return np.sum(p * x)


def list_extend(x):
    items = [x]
    items.extend([x * 2.0])  # REJECT
    return np.sum(items[-1])


def scale_in_place(v):
    v *= 2.0  # REJECT
    return v


def calls_a_function_that_updates_its_argument(x):
    p = x * 1.0
    return np.sum(scale_in_place(p) * x)


# -- accepted: the derivative is right -------------------------------------------------------


def update_a_number_argument(x):
    x += 1.0
    return x * x


def update_a_copy_of_a_number(x):
    y = z = x
    y *= 3.0
    return y * z


def bitwise_update_of_integer_argument(x, n):
    k = n
    k &= 3
    k |= 8
    return x * k


def update_a_fresh_array(x):
    p = x * 1.0
    p *= 2.0
    p += x
    return np.sum(p * p)


def normalize_rows_through_the_array(x):
    p = x * 1.0
    for i in range(p.shape[0]):
        row = p[i]
        p[i] = row / row.sum()
    return np.sum(p * p)


def normalize_rows_in_place(x):
    p = np.outer(x[0], x[1])
    for i in range(p.shape[0]):
        p[i] /= p[i].sum()
    return np.sum(p * p)


def write_into_a_copy(x):
    a = np.array(x)
    a[0] = 1.0
    b = x.copy()
    b *= 3.0
    return np.sum(a * b)


def shape_of_a_changed_view(x):
    p = x * 1.0
    v = p[1:]
    p[1:] = 0.0
    return np.sum(p * x) * v.shape[0]


def view_changed_but_not_read_again(x):
    p = x * 1.0
    v = p[1:]
    w = v * 2.0
    p[0] = 5.0
    return np.sum(p * x) + np.sum(w)


# -- more ways for two names to share memory (refused) ---------------------------------------


def alias_returned_by_a_closure(x):
    p = x * 1.0

    def get():
        return p

    q = get()
    q[0] = 0.0  # REJECT
    return np.sum(p * x)


def alias_from_split(x):
    p = x * 1.0
    a, _ = np.split(p, [1])
    a[0] = 0.0  # REJECT
    return np.sum(p * x)


def alias_on_one_branch(x):
    p = x * 1.0
    if x[0] > 0:
        q = p
    else:
        q = p * 1.0
    q[0] = 0.0  # REJECT
    return np.sum(p * x)


def identity(a):
    return a


def alias_returned_by_a_user_function(x):
    p = x * 1.0
    q = identity(p)
    q[0] = 0.0  # REJECT
    return np.sum(p * x)


# -- more accepted code ------------------------------------------------------------------------


def write_into_a_loop_carried_array(x):
    h = np.zeros(3)
    for t in range(3):
        h = np.tanh(h * x + x[t])
        h[0] = h[0] * 2.0
    return np.sum(h)


def accumulate_numbers(x):
    total = 0.0
    squares = 0.0
    for v in x:
        total += v
        squares += v * v
    return squares - total * total


def update_a_rebound_argument(x):
    x = x * 2.0
    x += 1.0
    return np.sum(x * x)


def update_a_builtin_sum(x):
    # sum() adds its items to 0, so its result is never one of them (refused until the
    # seed-400516 fuzz program showed it)
    s = sum(x)
    s += np.sum(x)
    t = sum(map(lambda e: e**2, x))
    t *= 2.0
    return s * t


def mask_updated_through_alias(x):
    m = x > 0.5
    kept = m
    m &= x < 1.5  # REJECT
    return np.sum(np.where(kept, x * x, 0.0))


def mask_updated_in_place(x):
    m = x > 0.5
    m &= x < 1.5
    m |= x > 1.9
    return np.sum(np.where(m, x * x, x))


def method_called_through_its_class(x):
    p = x * 1.0
    np.ndarray.fill(p, 2.0)  # REJECT
    return np.sum(p * x)


def standard_library_shuffle(x):
    items = [x, x * 2.0]
    random.shuffle(items)  # REJECT
    return np.sum(items[0])
