"""Every Python example of the documentation and the README runs against a real Weir (see tests/docs/examples.py)."""

from __future__ import annotations

import ast
import asyncio
import inspect
import subprocess
import sys

import pytest

import weir

from .examples import DEFAULT_ADDRESS, ROOT, examples, pages

BY_PAGE = {str(page.relative_to(ROOT)): examples(page) for page in pages()}
RUN_IN_PAGE = {page: [e for e in found if e.runs_in_page] for page, found in BY_PAGE.items()}
PYTEST_EXAMPLES = [e for found in BY_PAGE.values() for e in found if e.marker == "pytest"]
NOT_RUN = [e for found in BY_PAGE.values() for e in found if e.marker not in (None, "pytest")]


def _run(code: str, namespace: dict[str, object]) -> None:
    compiled = compile(code, "<docs example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)  # a coroutine when the block awaits at top level
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize("page", [page for page, found in RUN_IN_PAGE.items() if found])
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    namespace: dict[str, object] = {"__name__": "__docs_example__"}
    with weir.run_broker() as broker:
        for example in RUN_IN_PAGE[page]:
            try:
                _run(example.code.replace(DEFAULT_ADDRESS, broker.bootstrap_servers), namespace)
            except BaseException as exc:
                raise AssertionError(f"the example at {page}:{example.line} failed: {exc!r}") from exc


@pytest.mark.parametrize("example", PYTEST_EXAMPLES, ids=lambda e: f"{e.page}:{e.line}")
def test_pytest_examples_pass(example, tmp_path):
    (tmp_path / "test_docs_example.py").write_text(example.code)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_docs_example.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, f"{example.page}:{example.line}\n{run.stdout}\n{run.stderr}"


def test_blocks_not_run_are_few_and_say_why():
    assert len(NOT_RUN) <= 3, [f"{e.page}:{e.line}" for e in NOT_RUN]
    for example in NOT_RUN:
        assert example.marker.startswith("not run (") and len(example.marker) > len("not run ()") + 10, (
            f"{example.page}:{example.line}: say why the block does not run")


def test_examples_are_found():
    # the extraction itself: the getting-started page's two programs, seen as runnable
    assert len(RUN_IN_PAGE["docs/getting-started.md"]) == 2
    assert PYTEST_EXAMPLES and NOT_RUN


def test_a_failing_block_fails_and_markers_are_read(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n```python\nx = 1\n```\n\n"
                    "<!-- docs-example: pytest -->\n```python\ndef test_x(): pass\n```\n\n"
                    "<!-- docs-example: not run (why it does not) -->\n```python\nraise SystemExit\n```\n")
    found = examples(page)
    assert [e.marker for e in found] == [None, "pytest", "not run (why it does not)"]
    assert found[0].code == "x = 1\n" and found[0].line == 4
    with pytest.raises(ZeroDivisionError):
        _run("1 / 0", {})
    with pytest.raises(ZeroDivisionError):
        _run("import asyncio\nawait asyncio.sleep(0)\n1 / 0", {})  # top-level await runs too
