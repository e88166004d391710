"""The API reference covers every public name of weir.client with its docstring (docs/api_check.py)."""

from __future__ import annotations

import sys

from .examples import DOCS

sys.path.insert(0, str(DOCS))
import api_check  # noqa: E402  (docs/ is not a package)


def test_every_public_name_of_the_client_has_a_docstring():
    assert api_check.undocumented() == []


def test_every_public_name_of_the_client_is_on_a_reference_page():
    assert api_check.unreferenced() == []
    assert "weir.client.Producer" in api_check.public_names()
