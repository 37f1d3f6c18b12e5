"""Changes made in place: right derivatives, or a TransformError at the user's line, never a
wrong number. Every refused program here gave a wrong gradient (or changed the caller's
array) before the mutation analysis; every accepted one is checked against central
differences in reverse and forward mode, with its inputs left unchanged."""

import inspect
import linecache

import mutation_programs as programs
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

REFUSED_AT_TRANSFORM = [
    "fill_argument",
    "sort_argument",
    "put_argument",
    "out_argument",
    "positional_out",
    "add_at_argument",
    "asarray_alias_update",
    "alias_item_write",
    "reshape_alias_update",
    "transpose_alias_update",
    "ellipsis_alias_update",
    "element_of_list_argument",
    "global_item_write",
    "global_method",
    "fill_through_copy_name",
    "write_through_slice_view",
    "update_through_asarray",
    "write_through_ravel",
    "append_through_alias",
    "nested_function_writes_argument",
    "local_out",
    "local_copyto",
    "local_resize",
    "local_partition",
    "local_setitem_method",
    "local_in_place_operator_method",
    "list_extend",
    "alias_returned_by_a_closure",
    "alias_from_split",
    "alias_on_one_branch",
    "alias_returned_by_a_user_function",
    "method_called_through_its_class",
    "standard_library_shuffle",
]

# refused only when the argument is an array (for a Python number, or a vector where rows are
# numbers, nothing shares memory): at the first call, at the marked line
REFUSED_FOR_ARRAYS = [
    ("normalize_rows_through_view", "matrix"),
    ("update_through_alias", "vector"),
    ("update_item_of_list", "vector"),
    ("mask_updated_through_alias", "vector"),
]

MATRIX = np.array([[0.3, 1.2, 2.0], [0.7, -0.4, 1.1], [1.5, 0.2, 0.9]])
VECTOR = np.array([0.3, 1.2, 2.0])


def marked(fn):
    """(line, 1-based column) the ``# REJECT [text]`` marker in `fn`'s source points at: the
    statement's start, or the first occurrence of `text` on the line."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if "# REJECT" in text:
            code, _, marker = text.partition("# REJECT")
            marker = marker.strip()
            column = code.index(marker) if marker else len(code) - len(code.lstrip())
            return start + offset, column + 1
    raise AssertionError(f"no marker in {fn.__name__}")


def _assert_points_at(error, fn):
    line, column = marked(fn)
    assert isinstance(error, SyntaxError)
    assert error.filename == programs.__file__
    assert (error.lineno, error.offset) == (line, column), str(error)
    assert str(error).startswith(f"{programs.__file__}:{line}:{column}:")
    assert linecache.getline(programs.__file__, line).strip() in (error.text or "").strip()


@pytest.mark.parametrize("name", REFUSED_AT_TRANSFORM)
def test_change_normal_form_cannot_follow_is_refused_at_its_line(name):
    fn = getattr(programs, name)
    with pytest.raises(sg.TransformError) as info:
        sg.grad(fn)
    _assert_points_at(info.value, fn)
    with pytest.raises(sg.TransformError):
        sg.jvp(fn, (VECTOR.copy(),), (np.ones(3),))


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("fill_argument", "np.full_like(x, value)"),
        ("sort_argument", "x = np.sort(x)"),
        ("out_argument", "without out="),
        ("put_argument", "y[index] = value"),
        ("alias_item_write", "a = a.copy()"),
        ("global_item_write", "global 'GLOBAL_WEIGHTS'"),
        ("fill_through_copy_name", "b = np.full_like(b, value)"),
        ("list_extend", "one append per item"),
    ],
)
def test_refusal_says_what_to_write_instead(name, fragment):
    with pytest.raises(sg.TransformError, match=None) as info:
        sg.grad(getattr(programs, name))
    assert fragment in str(info.value)


@pytest.mark.parametrize("name, kind", REFUSED_FOR_ARRAYS)
def test_change_through_another_name_is_refused_for_an_array_at_the_first_call(name, kind):
    fn = getattr(programs, name)
    x = MATRIX.copy() if kind == "matrix" else VECTOR.copy()
    grad = sg.grad(fn)  # the argument may be a number
    with pytest.raises(sg.TransformError) as info:
        grad(x)
    _assert_points_at(info.value, fn)
    with pytest.raises(sg.TransformError) as info:
        sg.jvp(fn, (x,), (np.ones_like(x),))
    _assert_points_at(info.value, fn)
    np.testing.assert_array_equal(x, MATRIX if kind == "matrix" else VECTOR)


def test_refused_row_update_says_what_to_write_instead():
    with pytest.raises(sg.TransformError, match=r"p\[index\] = \.\.\."):
        sg.grad(programs.normalize_rows_through_view)(MATRIX.copy())


def test_callee_updating_its_argument_is_refused_at_the_callee_line():
    with pytest.raises(sg.TransformError) as info:
        sg.grad(programs.calls_a_function_that_updates_its_argument)(VECTOR.copy())
    _assert_points_at(info.value, programs.scale_in_place)


def test_augmented_update_of_an_array_argument_is_refused_at_the_first_call():
    grad = sg.grad(programs.update_a_number_argument)  # fine for a Python number
    x = VECTOR.copy()
    with pytest.raises(sg.TransformError) as info:
        grad(x)
    line, column = marked_line(programs.update_a_number_argument, "x += 1.0")
    assert (info.value.lineno, info.value.offset) == (line, column)
    assert "x = x + ... instead" in str(info.value)
    np.testing.assert_array_equal(x, VECTOR)
    with pytest.raises(sg.TransformError):
        sg.jvp(programs.update_a_copy_of_a_number, (x,), (np.ones(3),))


def marked_line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset, line.index(text) + 1
    raise AssertionError(text)


def _check(fn, args, wrt=0):
    """Reverse and forward mode against central differences; the inputs unchanged."""
    before = [np.copy(a) for a in args]
    expected = numerical_gradient(fn, list(args), wrt)
    got = sg.grad(fn, wrt=wrt)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    x = np.asarray(args[wrt], dtype=float)
    for k in np.ndindex(x.shape):
        direction = np.zeros_like(x)
        direction[k] = 1.0
        tangent = direction if x.shape else float(direction)
        primals = tuple(args)
        tangents = tuple(tangent if i == wrt else 0.0 * np.asarray(a) for i, a in enumerate(args))
        if not x.shape:
            tangents = tuple(float(t) if np.ndim(t) == 0 else t for t in tangents)
        _, out = sg.jvp(fn, primals, tangents)
        np.testing.assert_allclose(np.sum(out), expected[k], rtol=1e-6, atol=1e-6)
    for old, new in zip(before, args, strict=True):
        np.testing.assert_array_equal(old, new)


@pytest.mark.parametrize("x", [1.3, -0.6])
def test_augmented_update_of_a_number_argument_rebinds_it(x):
    _check(programs.update_a_number_argument, (x,))
    _check(programs.update_a_copy_of_a_number, (x,))
    assert sg.grad(programs.update_a_copy_of_a_number)(x) == pytest.approx(6.0 * x)


def test_bitwise_update_of_an_integer_argument():
    assert sg.grad(programs.bitwise_update_of_integer_argument)(1.5, 7) == pytest.approx(11.0)
    assert sg.grad(programs.bitwise_update_of_integer_argument)(1.5, 4) == pytest.approx(8.0)


@pytest.mark.parametrize(
    "name, x",
    [
        ("update_a_fresh_array", VECTOR),
        ("normalize_rows_through_the_array", MATRIX),
        ("normalize_rows_in_place", MATRIX[:2] + 1.0),
        ("write_into_a_copy", VECTOR),
        ("shape_of_a_changed_view", VECTOR),
        ("view_changed_but_not_read_again", VECTOR),
        ("write_into_a_loop_carried_array", VECTOR),
        ("accumulate_numbers", VECTOR),
        ("update_a_rebound_argument", VECTOR),
        ("mask_updated_in_place", VECTOR),
        ("update_a_builtin_sum", VECTOR),
    ],
)
def test_accepted_change_in_place_has_the_right_derivative(name, x):
    _check(getattr(programs, name), (x.copy(),))


def elements_of_a_flat_hstack_updated(x, w):
    joined = np.hstack([np.full(3, 0.5)[::-1][:1], w[1:]])
    total = 0.0
    for i, e in enumerate(joined):
        e -= 0.3  # a number: rebound, joined unchanged
        total = total + e * x * i
    return total


def rows_of_a_vstack_updated(w):
    stacked = np.vstack([w, w * 2.0])
    for row in stacked:
        row *= 2.0  # a view: stacked changes
    return np.sum(stacked * stacked)


def test_elements_of_a_flat_hstack_are_numbers():
    """np.hstack of vectors (one of them a slice of an argument, whose rank the first,
    argument-blind walk cannot know) is a vector: its elements are numbers, which ``-=``
    rebinds (fuzz campaign, seed 3300090: refused as a change through another name)."""
    args = (0.5, np.array([0.2, 0.5, -0.3]))
    for index in (0, 1):
        got = sg.grad(elements_of_a_flat_hstack_updated, wrt=index)(*args)
        expected = numerical_gradient(elements_of_a_flat_hstack_updated, args, index)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_rows_of_a_vstack_updated_in_place_are_refused():
    """np.vstack of vectors is a matrix: a row is a view, and ``row *= 2.0`` changes it."""
    with pytest.raises(sg.TransformError, match="'row' is updated in place"):
        sg.grad(rows_of_a_vstack_updated)(np.array([0.2, 0.5, -0.3]))


def loop_over_a_view_updated_in_the_body(v, y):
    y3 = np.full(3, 0.5)
    for i4, e5 in [(v + y, y), (y3[::-1], y + 0.1)]:
        v = np.append(v[:2], y3 @ i4)
        y3 -= np.sort(i4) * e5
    return np.sum(v)


def loop_over_values_of_its_own(w):
    y = w * 1.0
    total = 0.0
    for a, b in [(w, w * 2.0), (w[::-1], np.sin(w))]:
        y += a
        total = total + np.sum(a * b * y)
    return total


def test_a_loop_over_a_view_its_body_changes_is_refused():
    """The list literal holds a view of ``y3``; ``y3 -= ...`` in the first iteration
    changes what the second reads, which normal form cannot follow (the gradient was
    silently wrong: fuzz campaign, seed 3304203)."""
    with pytest.raises(sg.TransformError, match=r"the loop at line \d+ runs over values"):
        sg.grad(loop_over_a_view_updated_in_the_body, wrt=1)(np.array([0.2, -0.4, 0.9]), 0.7)


def test_a_loop_over_values_its_body_does_not_change_is_differentiated():
    w = np.array([0.2, -0.4, 0.9])
    expected = numerical_gradient(loop_over_values_of_its_own, (w,), 0)
    got = sg.grad(loop_over_values_of_its_own)(w)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def elements_of_a_copy_updated(w):
    y5 = w.copy()
    for e8 in y5:
        e8 **= 2  # a number of a vector's copy: rebound, y5 unchanged
    return np.sum(y5 * w)


def elements_of_a_cast_updated(w, c):
    y5 = w.astype(float)
    for e8 in y5:
        e8 *= c
    return np.sum(y5 * w) * c


def test_elements_of_a_copy_of_an_argument_are_what_the_argument_makes_them():
    """``w.copy()`` (``astype``, ``clip``, ``round``) of an argument has the argument's kind,
    a number or an array as the argument turns out: the first, argument-blind walk refused
    ``e8 **= 2`` on the elements of a copy of a vector for every argument type (fuzz
    campaign, seed 3600335, a false refusal); a matrix's rows are still views."""
    w = np.array([0.4, -0.7, 1.1])
    for f, args in ((elements_of_a_copy_updated, (w,)), (elements_of_a_cast_updated, (w, 1.3))):
        for index in range(len(args)):
            _check(f, args, index)
    with pytest.raises(sg.TransformError, match="'e8' is updated in place"):
        sg.grad(elements_of_a_copy_updated)(np.ones((2, 3)))


def numbers_unpacked_from_a_flipped_roll(x, w):
    u1, u2, u3 = np.flipud(np.roll(w, 1))
    u3 %= 2.0  # a number: rebound, u1 unchanged
    return u1 * x + u3 * u2


def elements_of_a_take(v):
    a1 = np.take(np.concatenate([v[:1], v[1:] * 0.5]), [2, 0, 0])
    total = 0.0
    for i4 in a1:
        i4 -= np.var(v)
        total = total + i4 * a1[0]
    return total


def rows_unpacked_from_a_flipped_matrix(W):
    u1, u2 = np.flipud(W)
    u2 *= 2.0
    return np.sum(u1 * u2)


def test_values_of_library_functions_keep_what_the_arguments_make_their_items():
    """The first, argument-blind walk lost an argument's kind through np.roll, np.flipud,
    np.copy and np.take, and refused updating their numbers for every argument type (fuzz
    campaign seeds 3610433, 3610531, 3610608: false refusals); a matrix's rows are still
    views."""
    x, w = 0.3, np.array([0.2, 0.7, -0.4])
    cases = ((numbers_unpacked_from_a_flipped_roll, (x, w)), (elements_of_a_take, (w,)))
    for f, args in cases:
        for index in range(len(args)):
            _check(f, args, index)
    with pytest.raises(sg.TransformError, match="'u2'"):
        sg.grad(rows_unpacked_from_a_flipped_matrix)(np.ones((2, 3)))


def element_of_a_copy_of_either_argument_updated(x, W, c):
    if c > 0:
        y = np.copy(x)
    else:
        y = np.copy(W)
    e = y[0]  # a number of the vector, a row (a view) of the matrix
    e *= 2.0
    return np.sum(y) + np.sum(x * W)


def test_a_value_of_either_of_two_ranks_is_no_array_of_any_rank():
    """A vector or a matrix (joined at an ``if``) is not known: its item may be a row. The
    join was an array whose rank the arguments decide, whose items the walk with the
    arguments' types known took for numbers: once np.copy kept an argument's kind, the
    doubled row went unseen and the gradient in W was silently wrong (caught before it
    landed)."""
    x, W = np.array([0.2, 0.7, -0.4]), np.arange(6.0).reshape(2, 3) / 7
    with pytest.raises(sg.TransformError, match="'e' is updated in place"):
        sg.grad(element_of_a_copy_of_either_argument_updated, wrt=(0, 1))(x, W, -1.0)


def _slot_shares_a_name(x):
    y = x * 2
    lst = [y, y]
    lst[0] += 1.0  # in place: lst[1] and y change too
    return np.sum(lst[1] * x)


def _slot_shares_a_view(x):
    y = x * 2
    lst = [y, y[:2]]  # the second slot is a view of the first
    lst[0] += 1.0
    return np.sum(lst[1] * x[:2])


def _slot_of_a_copied_list(x):
    y = x * 2
    lst = [y]
    copied = lst.copy()  # shallow: copied[0] is lst[0]
    copied[0] += 1.0
    return np.sum(lst[0] * x)


def _slot_of_a_dict_shares_a_name(x):
    y = x * 2
    d = {"a": y, "b": y}
    d["a"] += 1.0
    return np.sum(d["b"] * x)


def _slots_of_their_own(x):  # each slot its own array: rebinding is what NumPy does to it
    hs = [x * 2, x * 3]
    hs[0] += 1.0
    acc = {"s": 0.0}
    for v in x:
        acc["s"] += v**2
    return np.sum(hs[0] * hs[1]) + acc["s"]


@pytest.mark.parametrize(
    "f",
    [
        _slot_shares_a_name,
        _slot_shares_a_view,
        _slot_of_a_copied_list,
        _slot_of_a_dict_shares_a_name,
    ],
)
def test_an_array_in_a_slot_changed_in_place_while_another_name_holds_it(f):
    # normal form rebinds lst[0] += v, but NumPy changes the array in place, which the other
    # slot, the copy or the name also hold: the value and the gradient were wrong, silently
    # (hunt, idioms repro_19)
    # (another slot of the same container: refused at the write; another name or a copy:
    # marked changed, refused where it is read again)
    with pytest.raises(sg.TransformError, match=r"changes in place an array that|read again"):
        sg.grad(f)(np.array([0.3, -0.5, 0.8]))


def test_slots_holding_arrays_of_their_own_are_updated_in_place():
    x = np.array([0.3, -0.5, 0.8])
    want = [
        (_slots_of_their_own(x + e) - _slots_of_their_own(x - e)) / 2e-6 for e in np.eye(3) * 1e-6
    ]
    np.testing.assert_allclose(sg.grad(_slots_of_their_own)(x), want, rtol=1e-6)


def _slot_of_a_repeated_list(x):
    rows = [np.zeros(3)] * 3  # one array at every slot
    rows[0] += x
    return np.sum(rows[1] * x)


def _numbers_of_a_repeated_list(x):
    rows = [0.0] * 3  # numbers: a slot's += rebinds it, as NumPy does
    rows[0] += np.sum(x)
    return rows[0] * rows[1] + rows[0] ** 2


def test_a_repeated_list_of_arrays_changed_in_place_at_one_slot():
    with pytest.raises(sg.TransformError, match="another slot of rows also holds"):
        sg.grad(_slot_of_a_repeated_list)(np.array([0.3, -0.5, 0.8]))
    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(sg.grad(_numbers_of_a_repeated_list)(x), 2 * np.sum(x))


def _copy_of_a_list_argument(ps):
    qs = ps.copy()  # shallow: qs[0] is the caller's ps[0]
    a = qs[0]
    a += 1.0
    return np.sum(a * ps[0])


def _slot_of_a_copied_list_argument(ps):
    qs = ps.copy()
    qs[0] += 1.0  # in place on the caller's ps[0]
    return np.sum(qs[0] * ps[0])


def _slot_of_a_copied_dict_argument(d):
    e = d.copy()
    e["a"] += 1.0
    return np.sum(e["a"] * d["a"])


def _astype_without_a_copy(x):
    y = x.astype(np.float64, copy=False)  # x itself for a float64 x
    y += 1.0
    return np.sum(y * x)


def _copied_array_argument(x):  # an array's copy is new: its slots may change
    y = x.copy()
    y[0] += 1.0
    y[1:] *= 2.0
    return np.sum(y * x)


@pytest.mark.parametrize(
    ("f", "argument"),
    [
        (_copy_of_a_list_argument, [np.array([0.3, -0.5]), np.array([0.7, 0.2])]),
        (_slot_of_a_copied_list_argument, [np.array([0.3, -0.5]), np.array([0.7, 0.2])]),
        (_slot_of_a_copied_dict_argument, {"a": np.array([0.3, -0.5])}),
        (_astype_without_a_copy, np.array([0.3, -0.5, 0.8])),
    ],
    ids=["item of a copied list", "slot of a copied list", "slot of a copied dict", "astype"],
)
def test_a_shallow_copy_of_an_argument_changed_in_place_is_refused(f, argument):
    # .copy() of an argument of unknown kind was taken for an array's (a new object), and
    # astype(copy=False) for a copy: the caller's array changed and the derivative was
    # another function's (hunt, idioms repro_18)
    with pytest.raises(sg.TransformError, match="may share memory with the argument"):
        sg.grad(f)(argument)


def test_a_copied_array_argument_changed_in_place_is_fine():
    x = np.array([0.3, -0.5, 0.8])
    want = [
        (_copied_array_argument(x + e) - _copied_array_argument(x - e)) / 2e-6
        for e in np.eye(3) * 1e-6
    ]
    np.testing.assert_allclose(sg.grad(_copied_array_argument)(x), want, rtol=1e-6)


def _preallocated(x):
    acc = [None] * 2
    for i in range(2):
        acc[i] = np.zeros(3)
    acc[1] += x
    return np.sum(acc[1] ** 2)


def _states_appended(x):
    hs = []
    h = x
    for _ in range(2):
        h = np.tanh(h * 0.5)
        hs.append(h)
    hs[0] += hs[1]
    return np.sum(hs[0] * x)


def _read_then_updated(x):
    lst = [x * 2.0, x**2]
    v = lst[1]
    lst[1] += v**2
    return np.sum(lst[1] * x)


def _number_and_array_slots(x):
    m = {"s": 0.0, "v": np.zeros(3)}
    m["s"] += x[0]
    m["v"] += x
    return m["s"] * np.sum(m["v"])


@pytest.mark.parametrize(
    "f", [_preallocated, _states_appended, _read_then_updated, _number_and_array_slots]
)
def test_slots_updated_in_place_that_no_other_name_reads_again(f):
    # (the first form of the check refused these: names never read again, slots given new
    # arrays, numbers; the regression review of this session)
    x = np.array([0.3, -0.5, 0.8])
    want = [(f(x + e) - f(x - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(sg.grad(f)(x), want, rtol=1e-6, atol=1e-9)
