"""Every public name of ``weir.client`` is documented: a docstring, and a place in the API reference.

Public: the names in ``weir.client.__all__`` and ``weir.client.admin.__all__``, and the public
methods and properties of those classes (inherited ones included: ``Admin`` is made of mixins).
Read statically with griffe, as mkdocstrings reads them, so what passes here is what the site shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import griffe

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
PACKAGES = ("weir.client", "weir.client.admin")


def _load(package: str) -> griffe.Module:
    loaded = griffe.load(package, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    assert isinstance(loaded, griffe.Module)
    return loaded


def _target(obj: griffe.Object | griffe.Alias) -> griffe.Object | griffe.Alias:
    return obj.final_target if obj.is_alias else obj


def public_names() -> dict[str, griffe.Object | griffe.Alias]:
    """``{package.Name: object}`` for the exported names of each package."""
    found = {}
    for package in PACKAGES:
        module = _load(package)
        for name in module.exports or ():
            found[f"{package}.{name}"] = _target(module[name])
    return found


def undocumented() -> list[str]:
    """The public names (and public methods of the public classes) that have no docstring."""
    missing = []
    for name, obj in public_names().items():
        if obj.is_attribute:
            continue  # a constant: documented where the reference page lists it
        if not obj.docstring:
            missing.append(name)
        if obj.is_class:
            for member_name, member in obj.all_members.items():
                member = _target(member)
                if member_name.startswith("_") or not member.is_function:
                    continue
                if not member.docstring:
                    missing.append(f"{name}.{member_name} ({member.relative_filepath}:{member.lineno})")
    return missing


def unreferenced() -> list[str]:
    """Exported names of ``weir.client`` and ``weir.client.admin`` that no ``::: name`` of docs/api shows."""
    shown = set()
    for page in (DOCS / "api").glob("*.md"):
        shown |= set(re.findall(r"^::: ([\w.]+)", page.read_text(), re.MULTILINE))
    return [name for name in public_names() if name not in shown]
