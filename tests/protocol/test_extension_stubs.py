"""The type stubs of protocol/'s C extensions (protocol/_*.pyi) name what the built modules hold.

mypy checks callers against the stubs only; this keeps a stub from drifting from its C module
(a function renamed, added or with another number of parameters)."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import weir.protocol

EXTENSIONS = ("_record_scan", "_record_decode", "_record_encode")


def _stub_functions(name: str) -> dict[str, int]:
    """Each function the stub declares, with its count of positional parameters."""
    stub = Path(weir.protocol.__file__).with_name(f"{name}.pyi")
    tree = ast.parse(stub.read_text())
    return {node.name: len(node.args.posonlyargs) + len(node.args.args)
            for node in tree.body if isinstance(node, ast.FunctionDef)}


def _c_arity(function) -> int:
    """Positional parameters of a METH_VARARGS function, from the format of its PyArg_ParseTuple."""
    source = Path(weir.protocol.__file__).with_name(f"{function.__module__.rsplit('.', 1)[-1]}.c").read_text()
    body = source[source.index(f"PyObject *{function.__name__}(PyObject *"):]
    parse = body[body.index("PyArg_ParseTuple(args, \"") + len("PyArg_ParseTuple(args, \""):]
    codes = parse[:parse.index('"')].split(":")[0].split(";")[0]  # after ':' or ';': the function's name
    return sum(code.isalpha() for code in codes)  # one letter a parameter ("y*", "O!": their modifiers)


@pytest.mark.parametrize("name", EXTENSIONS)
def test_a_stub_declares_the_functions_of_its_module_with_their_arity(name):
    module = importlib.import_module(f"weir.protocol.{name}")
    built = {attr: value for attr, value in vars(module).items()
             if not attr.startswith("__") and inspect.isbuiltin(value)}
    declared = _stub_functions(name)
    assert set(declared) == set(built)
    for function_name, arity in declared.items():
        assert arity == _c_arity(built[function_name]), function_name
