"""A hostile or careless student's kernel file against the front end (vizmm.record.frontend).

The front end's promise: the file is read, never run; nothing in it reaches
vizmm, NumPy, builtins, the file system or a process; and what it does not
take gets one line (:class:`KernelRejected`) naming the file's line and what
is allowed, never a traceback, a hang or a memory blow-up. Each attack here
is written as a student might write it, and each test asserts that honest
outcome: the refusal and its words, or that the code never ran (no file
appeared) and the normalised tree holds no reference to the forbidden thing.
"""

import ast
import importlib.util
import json
import os
import stat

import pytest

from vizmm.record.frontend import (
    MAX_FILE_BYTES,
    MAX_SHARED_BYTES,
    KernelRejected,
    read_kernel,
    read_source,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = "from numba import cuda, float32\nimport numpy as np\n\n"
KERNEL = "@cuda.jit\ndef k(M, N, P):\n"


def _rejected(text, words, line=None, name="k"):
    """The one-line refusal of ``text`` (asserting its words and the file's line)."""
    with pytest.raises(KernelRejected) as info:
        read_source(text, name, path="student.py")
    msg = str(info.value)
    assert "\n" not in msg and len(msg) < 400, msg
    assert msg.startswith("student.py"), msg
    if line is not None:
        assert msg.startswith(f"student.py, line {line}: "), msg
    for w in words if isinstance(words, tuple) else (words,):
        assert w in msg, msg
    return msg


def _names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


# ------------------------------------------------------------------ reaching out through attributes
@pytest.mark.parametrize(
    "expr",
    [
        "cuda.__class__",
        "M.__class__.__mro__",
        "float32.__subclasses__",
        "math.__loader__",
        "cuda.jit.__globals__",
        "cuda.shared.array.__globals__",
        "cuda.threadIdx.x.__class__",
        "cuda.threadIdx.xy",  # not .x/.y/.z: "xy" is a substring of "xyz", not a dimension
        "M.T",
        "np.random",
    ],
)
def test_attributes_outside_the_subset_are_refused(expr):
    text = HEAD + "import math\n" + KERNEL + f"    P[0] = {expr}\n"
    _rejected(text, ("is not a value a kernel can read",) if "cuda" in expr else "", line=7)


@pytest.mark.parametrize(
    "name",
    ["__builtins__", "__import__", "globals", "getattr", "eval", "exec", "print", "breakpoint",
     "open", "type", "vars", "locals", "compile", "input", "exit"],
)  # fmt: skip
def test_builtins_beyond_the_few_numeric_ones_are_not_names_in_a_kernel(name):
    _rejected(HEAD + KERNEL + f"    P[0] = {name}\n", "is not defined in the kernel", line=6)
    if name == "print":  # a debugging print statement is set aside (next test), never run
        return
    _rejected(HEAD + KERNEL + f"    {name}(1)\n", "is not a function a kernel may call", line=6)


def test_a_debugging_print_is_set_aside_never_run_and_its_text_never_echoed():
    ks = read_source(HEAD + KERNEL + "    print('secret', M[0])\n    P[0] = 1\n", "k")
    assert "print" not in ast.unparse(ks.tree) and "secret" not in ast.unparse(ks.tree)
    assert any("line 6: print(...) in the kernel" in n for n in ks.notes)
    assert not any("secret" in n for n in ks.notes)
    _rejected(
        HEAD + KERNEL + "    P[0] = print(1)\n", "is not a function a kernel may call", line=6
    )


def test_a_name_assigned_somewhere_in_the_kernel_is_still_not_callable():
    # eval is a local (assigned on a dead branch), so a call to it is a call of a number
    text = HEAD + KERNEL + "    if False:\n        eval = 1\n    eval(1)\n"
    _rejected(text, "eval is not a function", line=8)


# ------------------------------------------------------------------ decorators
def test_a_decorators_arguments_never_run_and_must_be_literal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for deco in (
        "@cuda.jit(device=__import__('os').system('touch pwned'))",
        "@cuda.jit(debug=print(1))",
        "@cuda.jit(open('pwned', 'w'))",
        "@cuda.jit(device=DEVICE)",
        "@cuda.jit(**options)",
    ):
        text = HEAD + "DEVICE = True\n" + deco + "\ndef k(M, N, P):\n    P[0] = 1\n"
        _rejected(text, "cuda.jit", line=5)
    assert not os.listdir(tmp_path)


def test_a_signature_and_literal_options_are_kept():
    for deco in (
        "@cuda.jit('void(float32[:, :], float32[:, :], float32[:, :])')",
        "@cuda.jit(debug=False, fastmath=True)",
        "@cuda.jit(cuda.void(float32[:, :], float32[:, :], float32[:, :]))",
    ):
        ks = read_source(HEAD + deco + "\ndef k(M, N, P):\n    P[0, 0] = 1\n", "k")
        assert ks.tree.decorator_list == []


def test_a_second_decorator_or_a_foreign_one_is_refused():
    two = (
        HEAD
        + "import functools\n\n@functools.lru_cache\n@cuda.jit\ndef k(M, N, P):\n    P[0] = 1\n"
    )
    _rejected(two, ("2 decorators", "@cuda.jit"), line=8)
    # a decorator other than cuda.jit makes a plain Python function: not a kernel
    other = HEAD + "import functools\n\n@functools.lru_cache\ndef k(M, N, P):\n    P[0] = 1\n"
    _rejected(other, "plain Python function")


# ------------------------------------------------------------------ signatures
@pytest.mark.parametrize(
    "sig, words",
    [
        ("M, N, P=None", "plain positional parameters"),
        ("M, N, *, P", "plain positional parameters"),
        ("M, N, *P", "plain positional parameters"),
        ("M, N, **P", "plain positional parameters"),
        ("M, N, P, /", "plain positional parameters"),
        ("M, N, P=__import__('os').system('x')", "plain positional parameters"),
        ("M, N, cuda", "hides the cuda"),
        ("M, N, range", "hides the range"),
        ("M, N, float32", "hides the float32"),
        ("M, N, np", "hides the np"),
        ("M, N, _P", "starts with an underscore"),
        ("M__tg, N, P", "double underscore"),
        ("M, Nds__src, P", "double underscore"),
    ],
)
def test_a_kernels_parameters_are_plain_names_of_its_own(sig, words):
    _rejected(HEAD + f"@cuda.jit\ndef k({sig}):\n    M[0] = 1\n", words, line=5)


def test_annotations_are_never_kept_so_they_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (
        HEAD + "@cuda.jit(device=True)\n"
        "def f(x: open('pwned_dev', 'w')) -> open('pwned_ret', 'w'):\n"
        "    a = x\n    for i in range(3):\n        a += i\n        if a > 5:\n"
        "            return a\n    return a\n\n"
        "@cuda.jit\ndef k(M: open('pwned_k', 'w'), N, P) -> print:\n    P[0] = f(M[0])\n"
    )
    ks = read_source(text, "k")
    assert ks.device_functions  # f returns inside a loop: compiled, not inlined
    for fn in (ks.tree, *ks.device_functions):
        assert "open" not in _names(fn) and "print" not in _names(fn)
        assert fn.returns is None and all(a.annotation is None for a in fn.args.args)
    from vizmm.record.instrument import instrument

    instrument(ks, engine="simt")  # vizmm's simulator compiles the device function here
    if importlib.util.find_spec("numba") is not None:
        from vizmm_kernels import _target

        ks.namespace(_target)  # and the process's compiler: no file appears either way
    assert not os.listdir(tmp_path)


# ------------------------------------------------------------------ rebinding what the kernel reads
@pytest.mark.parametrize(
    "module_code, line",
    [
        ("cuda = 5\n", 4),
        ("import os\ncuda = os\n", 5),
        ("class cuda:\n    pass\n", 4),
        ("def cuda():\n    pass\n", 4),
        ("import os as cuda\n", 4),
        ("import os\nfloat32 = os\n", 5),
        ("float32 = np.float64\n", 4),
        ("from numba import float64 as float32\n", 4),
        ("range = 3\n", 4),
        ("for range in [1]:\n    pass\n", 4),
        ("import numba as float32\n", 4),
    ],
)
def test_a_name_the_kernel_reads_is_never_rebound_at_module_level(module_code, line):
    text = HEAD + module_code + "\n" + KERNEL + "    P[0] = cuda.threadIdx.x + float32(1)\n"
    _rejected(text, ("a kernel reads", "rename"), line=line)


@pytest.mark.parametrize(
    "module_code",
    [
        "TILE_WIDTH = 2\nTILE_WIDTH = int(input())\n",  # vizmm would read 2, Python the input
        "TILE_WIDTH = 2\nTILE_WIDTH += 1\n",
        "TILE_WIDTH = 2\ndef TILE_WIDTH():\n    pass\n",
        "import numpy as np\nnp = None\n",
        "f32 = np.float32\nf32 = 2\n",
    ],
)
def test_a_name_bound_twice_in_two_senses_is_refused(module_code):
    text = HEAD + module_code + KERNEL + "    P[0] = TILE_WIDTH\n"
    _rejected(text, ("bound again", "bound once"))


def test_a_constant_set_twice_takes_the_last_as_python_would():
    text = HEAD + "TILE_WIDTH = 2\nTILE_WIDTH = 4\n" + KERNEL + "    P[0] = TILE_WIDTH\n"
    assert read_source(text, "k").constants["TILE_WIDTH"] == 4


def test_aliasing_tricks_resolve_to_what_was_imported():
    text = (
        "from numba import cuda as np\nimport numpy as cu\nimport math as m\n\n"
        "@np.jit\ndef k(M, N, P):\n    P[0] = np.threadIdx.x + cu.float32(m.sqrt(2.0))\n"
    )
    ks = read_source(text, "k")
    assert ast.unparse(ks.tree).endswith("P[0] = cuda.threadIdx.x + float32(math.sqrt(2.0))")
    # numpy's module bound as cuda is not numba.cuda: the kernel cannot read a thread index
    _rejected("import numpy as cuda\n\n@cuda.jit\ndef k(M):\n    M[0] = 1\n", "rename", line=1)


def test_dunder_and_underscore_names_at_module_level_are_not_the_kernels():
    ks = read_source(HEAD + "__builtins__ = 1\n__version__ = 2\n" + KERNEL + "    P[0] = 1\n", "k")
    assert "__builtins__" not in ks.constants and "__version__" not in ks.constants
    _rejected(HEAD + "_T = 2\n" + KERNEL + "    P[0] = 1\n", "underscore", line=4)
    _rejected(HEAD + "T__tg = 2\n" + KERNEL + "    P[0] = 1\n", "double underscore", line=4)
    dev = HEAD + "@cuda.jit(device=True)\ndef _f(x):\n    return x\n" + KERNEL + "    P[0] = 1\n"
    _rejected(dev, "underscore", line=5)


@pytest.mark.parametrize("local", ["range", "min", "float32", "cuda", "math", "np", "f"])
def test_a_local_never_hides_a_builtin_a_type_an_import_or_a_device_function(local):
    text = (
        HEAD + "import math\n\n@cuda.jit(device=True)\ndef f(x):\n    return x\n\n"
        + KERNEL + f"    {local} = 2\n    P[0] = 1\n"
    )  # fmt: skip
    _rejected(text, f"hides the {local}", line=12)


# ------------------------------------------------------------------ huge or deep input
@pytest.mark.parametrize(
    "value",
    ["10**10**10", "1 << 10**9", "'a' * 10**9", "2**62 * 2**62", "(1,) * 10**9", "1e308 ** 2"],
)
def test_a_huge_constant_expression_is_not_a_constant(value):
    # computed by no one: set aside, so a kernel reading it names an undefined constant
    text = HEAD + f"BIG = {value}\n" + KERNEL + "    P[0] = BIG\n"
    _rejected(text, "'BIG' is not defined", line=7)


def test_a_tuple_constant_of_a_million_elements_is_read_once():
    text = HEAD + "T = (" + "0," * 10**6 + ")\n" + KERNEL + "    P[0] = 1\n"
    assert len(text.encode()) < MAX_FILE_BYTES * 2
    if len(text.encode()) > MAX_FILE_BYTES:
        _rejected(text, "at most")
    else:
        assert len(read_source(text, "k").constants["T"]) == 10**6


@pytest.mark.parametrize(
    "where, expr",
    [
        ("kernel", "(" * 100_000 + "1" + ")" * 100_000),
        ("kernel", " + ".join(["1"] * 100_000)),
        ("module", " + ".join(["1"] * 100_000)),
        ("module", " + ".join(["a"] * 100_000)),
        ("kernel", "-" * 100_000 + "1"),
        ("kernel", "not " * 100_000 + "1"),
        ("kernel", " ** ".join(["1"] * 100_000)),
        ("kernel", "cuda" + ".a" * 100_000),
        ("kernel", " + ".join(["1"] * 300)),  # parses; the checker's recursion would not
        ("kernel", "1 if 1 else " * 300 + "1"),
    ],
)
def test_deep_expressions_are_one_line_never_a_recursion_error(where, expr):
    text = HEAD + (f"X = {expr}\n" if where == "module" else "") + KERNEL
    text += f"    P[0] = {expr}\n" if where == "kernel" else "    P[0] = 1\n"
    _rejected(text, "nest")


def test_a_kernel_of_reasonable_depth_still_reads():
    text = HEAD + KERNEL + "    P[0] = " + " + ".join(["M[0]"] * 60) + "\n"
    assert ast.unparse(read_source(text, "k").tree).count("M[0]") == 60


def test_inlining_that_expands_exponentially_is_refused_not_run_forever():
    text = (
        HEAD + "@cuda.jit(device=True)\ndef sq(x):\n    return x * x * x * x\n\n"
        + KERNEL + "    P[0] = " + "sq(" * 12 + "M[0]" + ")" * 12 + "\n"
    )  # fmt: skip
    _rejected(text, "inlined", line=10)
    ok = HEAD + "@cuda.jit(device=True)\ndef sq(x):\n    return x * x\n\n" + KERNEL
    tree = read_source(ok + "    P[0] = sq(sq(M[0]))\n", "k").tree
    assert ast.unparse(tree).count("M[0]") == 4  # (M[0] * M[0]) * (M[0] * M[0])


@pytest.mark.parametrize(
    "devices, words",
    [
        ("def f(x):\n    return f(x - 1)\n", "f -> f"),
        ("def f(x):\n    if x > 0:\n        f(x - 1)\n", "f -> f"),
        ("def f(x):\n    return g(x)\n\n@cuda.jit(device=True)\ndef g(x):\n    return f(x)\n",
         "f -> g -> f"),
        ("def f(x):\n    for i in range(2):\n        if x > i:\n            return f(x)\n"
         "    return x\n", "f -> f"),
    ],
)  # fmt: skip
def test_recursive_device_functions_are_refused_not_inlined_forever(devices, words):
    text = HEAD + "@cuda.jit(device=True)\n" + devices + "\n" + KERNEL + "    P[0] = f(M[0])\n"
    _rejected(text, ("calls itself", words, "recursion"))


def test_an_inlined_local_never_takes_a_name_the_student_wrote():
    text = (
        HEAD + "@cuda.jit(device=True)\ndef acc(x):\n    t = x + 1\n    P2 = t * 2\n\n"
        + KERNEL + "    acc_t_0 = 5\n    acc(M[0])\n    P[0] = acc_t_0\n"
    )  # fmt: skip
    tree = read_source(text, "k").tree
    assigned = [ast.unparse(s.targets[0]) for s in tree.body if isinstance(s, ast.Assign)]
    assert assigned.count("acc_t_0") == 1  # the student's own, once; the inlined t is another


# ------------------------------------------------------------------ arrays
def test_a_shared_array_over_48_kib_per_block_is_refused_naming_the_bytes():
    msg = _rejected(HEAD + KERNEL + "    S = cuda.shared.array(10**9, float32)\n", "shared", 6)
    assert "4000000000 bytes" in msg and str(MAX_SHARED_BYTES) in msg
    # two arrays of 32 KiB each: 64 KiB for the block
    two = HEAD + KERNEL + (
        "    A = cuda.shared.array((64, 128), float32)\n"
        "    B = cuda.shared.array((64, 128), float32)\n"
    )  # fmt: skip
    assert "65536" in _rejected(two, "shared", line=7)
    # 48 KiB exactly is the limit, not over it
    read_source(HEAD + KERNEL + "    S = cuda.shared.array((96, 128), float32)\n", "k")


def test_a_local_array_over_the_bound_is_refused():
    _rejected(HEAD + KERNEL + "    L = cuda.local.array(10**9, float32)\n", "local array", 6)


def test_a_shape_that_reads_a_kernel_variable_is_not_the_files_constant():
    text = HEAD + "TILE_WIDTH = 2\n@cuda.jit\ndef k(M, N, P, TILE_WIDTH):\n"
    _rejected(text + "    S = cuda.shared.array(TILE_WIDTH, float32)\n", "must be a constant", 7)


def test_atomics_update_an_array_element_not_a_scalar():
    text = HEAD + KERNEL + "    x = 1\n    cuda.atomic.add(x, 0, 1)\n"
    _rejected(text, "element of an array", line=7)
    read_source(HEAD + KERNEL + "    cuda.atomic.add(P, (0, 0), M[0, 0])\n", "k")


# ------------------------------------------------------------------ statements and values
@pytest.mark.parametrize(
    "body, words",
    [
        ("    x = f'{M}'\n", "outside the CUDA Python subset"),
        ("    if (y := 1):\n        pass\n", "outside the CUDA Python subset"),
        ("    global G\n", "global statement"),
        ("    try:\n        pass\n    except Exception:\n        pass\n", "try statement"),
        ("    with open('x') as f:\n        pass\n", "with statement"),
        ("    assert M[0] == 0\n", "assert statement"),
        ("    del M\n", "delete statement"),
        ("    import os\n", "import statement"),
        ("    from os import system\n", "importfrom statement"),
        ("    def inner():\n        pass\n", "functiondef statement"),
        ("    class C:\n        pass\n", "classdef statement"),
        ("    x = lambda: 1\n", "Lambda"),
        ("    x = yield\n", "Yield"),
        ("    a, *b = 1, 2\n", "cannot assign"),
        ("    x = [i for i in range(3)]\n", "ListComp"),
        ("    x = M[0:4:2]\n", "step"),
        ("    x = 'text'\n", "str constant"),
        ("    x = b'text'\n", "bytes constant"),
        ("    x = 1j\n", "complex constant"),
        ("    x = None\n", "NoneType constant"),
        ("    x = ...\n", "ellipsis constant"),
        ("    if M is P:\n        pass\n", "compare numbers"),
        ("    if 1 in M:\n        pass\n", "compare numbers"),
        ("    for i in [1, 2]:\n        pass\n", "range(...)"),
        ("    for i in M:\n        pass\n", "range(...)"),
        ("    raise ValueError\n", "raise statement"),
        ("    match M:\n        case _:\n            pass\n", "match statement"),
        ("    return 1\n", "returns nothing"),
        ("    x += 1\n    P[0] = x\n", "used before it is assigned"),
        ("    k(M, N, P)\n", "k is a kernel"),
        ("    x = {'a': 1}\n", "Dict"),
        ("    M.foo = 1\n", "cannot assign"),
    ],
)
def test_outside_the_subset_is_one_line(body, words):
    _rejected(HEAD + KERNEL + body, words, line=6)


def test_async_yield_and_very_long_lines():
    _rejected(HEAD + "@cuda.jit\nasync def k(M):\n    M[0] = 1\n", "no kernel named 'k'")
    _rejected(HEAD + KERNEL + "    P[0] = " + "1" * 200_000 + "\n", "syntax error", line=6)
    _rejected(HEAD + KERNEL + "    P[0] = " + "1" * 4000 + "\n", "64 bits", line=6)
    _rejected(HEAD + "BIG = " + "1" * 4000 + "\n" + KERNEL + "    P[0] = BIG\n", "BIG", line=7)
    long_name = HEAD + KERNEL + "    P[0] = " + "a" * 200_000 + "\n"
    _rejected(long_name, "is not defined", line=6)


def test_unicode_identifiers_are_python_identifiers_nfkc():
    # Python folds ｒａｎｇｅ (fullwidth) into range: the kernel loops over range as written
    text = (
        HEAD
        + KERNEL
        + "    π = 3\n    for i in \uff52\uff41\uff4e\uff47\uff45(π):\n        P[i] = i\n"
    )
    tree = read_source(text, "k").tree
    assert "for i in range(π)" in ast.unparse(tree)


def test_a_kernel_name_that_is_not_an_identifier_is_not_a_kernel_there():
    for name in ("k; import os", "__import__('os')", "", "k.__globals__"):
        _rejected(HEAD + KERNEL + "    P[0] = 1\n", "no kernel named", name=name)


def test_module_level_side_effects_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (
        "import os\nfrom numba import cuda\n"
        "open('pwned_1', 'w')\n"
        "os.system('touch pwned_2')\n"
        "X = open('pwned_3', 'w')\n"
        "class C:\n    open('pwned_4', 'w')\n"
        "try:\n    open('pwned_5', 'w')\nexcept Exception:\n    pass\n"
        "if __name__ == '__main__':\n    open('pwned_6', 'w')\n"
        "@cuda.jit\ndef k(M):\n    M[0] = 1\n"
    )
    ks = read_source(text, "k")
    assert len(ks.notes) == 7
    assert not os.listdir(tmp_path)


# ------------------------------------------------------------------ files
def test_files_that_are_not_regular_files_are_refused_without_opening(tmp_path):
    fifo = tmp_path / "kernel_fifo.py"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    with pytest.raises(KernelRejected, match="not a regular file"):
        read_kernel(str(fifo), "k")
    with pytest.raises(KernelRejected, match="not a regular file"):
        read_kernel(str(tmp_path), "k")
    zero = tmp_path / "zero.py"
    zero.symlink_to("/dev/zero")  # endless bytes
    with pytest.raises(KernelRejected, match="not a regular file"):
        read_kernel(str(zero), "k")
    with pytest.raises(KernelRejected, match="does not exist"):
        read_kernel(str(tmp_path / "missing.py"), "k")
    with pytest.raises(KernelRejected, match="does not exist"):
        read_kernel("bad\0name.py", "k")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_file_over_the_size_limit_or_not_utf8_is_one_line(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(HEAD + KERNEL + "    P[0] = 1\n" + "#" * (2 << 20) + "\n")
    with pytest.raises(KernelRejected, match=f"at most {MAX_FILE_BYTES}"):
        read_kernel(str(big), "k")
    latin = tmp_path / "latin.py"
    latin.write_bytes((HEAD + KERNEL + "    P[0] = 1  # caf\xe9\n").encode("latin-1"))
    with pytest.raises(KernelRejected, match=r"latin.py, line 6: the file is not UTF-8"):
        read_kernel(str(latin), "k")
    nul = tmp_path / "nul.py"
    nul.write_bytes((HEAD + KERNEL + "    P[0] = 1\0\n").encode())
    with pytest.raises(KernelRejected, match="syntax error") as info:
        read_kernel(str(nul), "k")
    assert "None" not in str(info.value)


# ------------------------------------------------------------------ valid kernels still read
def test_every_labelled_and_student_kernel_still_reads():
    base = os.path.join(ROOT, "benchmarks", "labelled")
    with open(os.path.join(base, "labels.json")) as f:
        labels = json.load(f)["kernels"]
    for k in labels:
        read_kernel(os.path.join(base, k["file"]), k["kernel"])
    student = os.path.join(ROOT, "tests", "fixtures", "student")
    read = 0
    for name in sorted(os.listdir(student)):
        path = os.path.join(student, name)
        with open(path) as f:
            module = ast.parse(f.read())
        for fn in module.body:
            if isinstance(fn, ast.FunctionDef) and any(
                ast.unparse(d) in ("cuda.jit", "numba.cuda.jit") for d in fn.decorator_list
            ):
                read_kernel(path, fn.name)
                read += 1
    assert len(labels) > 50 and read > 5


def test_a_chain_of_device_functions_reads_and_too_many_functions_is_one_line():
    chain = "".join(
        f"@cuda.jit(device=True)\ndef f{i}(x):\n    return f{i + 1}(x)\n\n" for i in range(100)
    )
    text = HEAD + chain + "@cuda.jit(device=True)\ndef f100(x):\n    return x + 1\n\n" + KERNEL
    tree = read_source(text + "    P[0] = f0(M[0])\n", "k").tree
    assert ast.unparse(tree.body[-1]) == "P[0] = M[0] + 1"  # 101 calls inlined to one sum
    many = "".join(f"@cuda.jit(device=True)\ndef g{i}(x):\n    return x\n\n" for i in range(300))
    _rejected(HEAD + many + KERNEL + "    P[0] = 1\n", "more than 256")


def test_a_callers_constants_never_replace_what_the_kernel_reads():
    text = HEAD + "TILE_WIDTH = 2\n" + KERNEL + "    P[0] = TILE_WIDTH + float32(1)\n"
    ks = read_source(
        text, "k", constants={"TILE_WIDTH": 4, "cuda": 1, "__builtins__": 0, "float32": 2}
    )
    assert ks.constants == {"TILE_WIDTH": 4}


def test_math_constants_are_values_a_kernel_reads():
    text = HEAD + "import math\n\n" + KERNEL + "    P[0] = math.pi * M[0]\n"
    assert ast.unparse(read_source(text, "k").tree).endswith("P[0] = math.pi * M[0]")


def test_an_inlined_device_function_never_reads_the_kernels_variables():
    # Python finds Row nowhere in f: inlined, it must not become the kernel's Row
    dev = HEAD + "@cuda.jit(device=True)\ndef f(x):\n    return x + Row\n\n"
    _rejected(dev + KERNEL + "    Row = 1\n    P[0] = f(M[0])\n", "f reads 'Row'", line=11)
    proc = HEAD + "@cuda.jit(device=True)\ndef g(A):\n    A[0] = Row\n\n"
    _rejected(proc + KERNEL + "    Row = 1\n    g(P)\n", "g reads 'Row'", line=11)
    # a module constant is the file's: it may be read
    ok = HEAD + "T = 2\n\n@cuda.jit(device=True)\ndef f(x):\n    return x * T\n\n" + KERNEL
    assert ast.unparse(read_source(ok + "    P[0] = f(M[0])\n", "k").tree).endswith("M[0] * T")


_ALLOWED_NODES = (
    ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.AugAssign, ast.For, ast.While,
    ast.If, ast.Expr, ast.Return, ast.Pass, ast.Break, ast.Continue, ast.Name, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.BoolOp,
    ast.Compare, ast.IfExp, ast.Call, ast.keyword, ast.expr_context, ast.operator,
    ast.unaryop, ast.boolop, ast.cmpop,
)  # fmt: skip


def _assert_only_the_subset(tree, ks):
    """Every node of a normalised tree is of the subset; every name one vizmm binds."""
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    params = {a.arg for a in tree.args.args}
    known = (
        stored | params | set(ks.constants) | set(ks.types) | {f.name for f in ks.device_functions}
        | {"cuda", "math", "float32", "float64", "int32", "int64", "uint32", "uint64", "int16",
           "int8", "boolean", "range", "min", "max", "abs", "int", "float", "bool", "len", "round"}
    )  # fmt: skip
    for n in ast.walk(tree):
        assert isinstance(n, _ALLOWED_NODES), ast.dump(n)[:80]
        if isinstance(n, ast.Name):
            assert n.id in known and "__" not in n.id and not n.id.startswith("_"), n.id
        if isinstance(n, ast.Attribute):
            assert not n.attr.startswith("_"), n.attr
        if isinstance(n, ast.Constant):
            assert isinstance(n.value, (int, float, bool)) or n.value is None, n.value
    assert tree.decorator_list == [] and tree.returns is None
    assert all(a.annotation is None for a in tree.args.args)


def test_every_labelled_kernels_normalised_tree_holds_only_the_subset():
    base = os.path.join(ROOT, "benchmarks", "labelled")
    with open(os.path.join(base, "labels.json")) as f:
        labels = json.load(f)["kernels"]
    for k in labels:
        ks = read_kernel(os.path.join(base, k["file"]), k["kernel"])
        for tree in (ks.tree, *ks.device_functions):
            _assert_only_the_subset(tree, ks)


@pytest.mark.parametrize(
    "body",
    ["M[0] = __import__('os')\n", "M[0] = getattr(M, 'x')\n", "M[0] = M.__class__\n",
     "M[0] = cuda.__dict__\n", "M[0] = (lambda: 1)()\n"],
)  # fmt: skip
def test_text_given_in_code_is_checked_the_same(body):
    with pytest.raises(KernelRejected, match=r"^<kernel source>, line 2: "):
        read_source("def k(M):\n    " + body, None, lenient=True)


@pytest.mark.parametrize(
    "expr, words",
    [
        ("10 ** 10 ** 10", "exponent above 64"),
        ("M[0] ** 10 ** 10", "exponent above 64"),
        ("M[0] ** BIG", "exponent above 64"),
        ("1 << 10 ** 9", "shift outside 0..63"),
        ("M[0] << 99", "shift outside 0..63"),
        ("2 ** 62 * 2 ** 62", "no number a kernel computes"),
        ("1 // 0", "no number a kernel computes"),
    ],
)
def test_arithmetic_on_constants_beyond_64_bits_is_refused_before_anything_evaluates_it(
    expr, words
):
    # the recorder evaluates a loop's bounds in Python: 10 ** 10 ** 10 would never finish
    text = HEAD + "BIG = 1000\n" + KERNEL + f"    for i in range({expr}):\n        P[0] = i\n"
    _rejected(text, words, line=7)
    ok = HEAD + "BIG = 1000\n" + KERNEL + "    P[0] = M[0] ** 2 + (1 << 3) + 2 ** 10 + BIG // 3\n"
    read_source(ok, "k")


def test_many_local_arrays_add_up_to_the_bound():
    body = "".join(f"    L{i} = cuda.local.array(1024, float32)\n" for i in range(5))
    msg = _rejected(HEAD + KERNEL + body, "local arrays take at most", line=10)
    assert "20480" in msg  # 5 arrays of 1024 float32 (4 bytes): 5 * 4096
    read_source(HEAD + KERNEL + body.replace("(1024,", "(512,").replace("1024", "512"), "k")


def test_an_import_inside_try_is_set_aside_and_named_so():
    text = (
        "try:\n    from numba import cuda, float32\nexcept ImportError:\n    pass\n\n"
        "@cuda.jit\ndef k(M):\n    M[0] = 1\n"
    )
    # never run, so cuda is not imported: the file defines no kernel vizmm can see
    _rejected(text, ("does not import cuda at its top level", "from numba import cuda"), line=6)
    fallback = text.replace("    pass\n", "    cuda = None\n")
    _rejected(fallback, ("'cuda'", "a kernel reads"), line=4)


def test_a_cpu_jit_function_is_a_plain_function_not_a_kernel():
    text = "import numba\n\n@numba.njit\ndef k(M):\n    M[0] = 1\n"
    _rejected(text, "plain Python function")


def test_a_byte_order_mark_and_crlf_lines_read_as_python_reads_them(tmp_path):
    f = tmp_path / "windows.py"
    f.write_bytes(
        b"\xef\xbb\xbf" + (HEAD + KERNEL + "    P[0] = 1\n").replace("\n", "\r\n").encode()
    )
    ks = read_kernel(str(f), "k")
    assert ks.first_line == 4 and ast.unparse(ks.tree).endswith("P[0] = 1")


def test_a_device_procedure_that_assigns_its_parameter_changes_only_its_copy():
    # Python passes numbers by value: step's n += 1 never changes the kernel's Width
    text = (
        HEAD + "@cuda.jit(device=True)\ndef step(A, n):\n    n += 1\n    A[0] = n\n\n"
        "@cuda.jit\ndef k(M, N, P, Width):\n    step(P, Width)\n    step(P, 3)\n    P[1] = Width\n"
    )
    tree = read_source(text, "k").tree
    stores = [ast.unparse(s) for s in ast.walk(tree) if isinstance(s, (ast.Assign, ast.AugAssign))]
    assert not any(s.startswith(("Width", "3 ")) for s in stores), stores
    assert "step_n_0 = Width" in stores and "step_n_0 += 1" in stores
    assert "step_n_1 = 3" in stores and stores[-1] == "P[1] = Width"


def test_names_imported_from_numba_cuda_read_as_cuda_names():
    text = (
        "from numba.cuda import jit, threadIdx, syncthreads, shared\nfrom numba import float32\n\n"
        "@jit\ndef k(M, N, P):\n    S = shared.array(4, float32)\n    S[threadIdx.x] = 1\n"
        "    syncthreads()\n    P[0] = S[0]\n"
    )
    body = ast.unparse(read_source(text, "k").tree)
    assert "cuda.shared.array(4, float32)" in body and "S[cuda.threadIdx.x] = 1" in body
    assert "cuda.syncthreads()" in body
    many = HEAD + "".join(f"@cuda.jit\ndef k{i}(M):\n    M[0] = 1\n" for i in range(200))
    assert len(_rejected(many, "kernels there: k0, k1")) < 400


def test_soft_keywords_are_plain_names_and_nonlocal_or_async_are_refused():
    # match, case and type are keywords only in their own statements (Python 3.10, 3.12)
    text = HEAD + KERNEL + "    match = 1\n    case = 2\n    type = match + case\n    P[0] = type\n"
    assert ast.unparse(read_source(text, "k").tree).endswith("P[0] = type")
    _rejected(HEAD + KERNEL + "    nonlocal P\n", "nonlocal statement is outside", line=6)
    _rejected(HEAD + KERNEL + "    async = 1\n", "syntax error", line=6)
    _rejected(HEAD + KERNEL + "\tP[0] = 1\n        P[1] = 1\n", "syntax error")
