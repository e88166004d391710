"""Java properties files (server.properties), as Kafka reads them with ``java.util.Properties``."""

from __future__ import annotations

from pathlib import Path


class PropertiesError(ValueError):
    pass


def read_properties(path: str | Path) -> dict[str, str]:
    """Java-style properties: name=value (or name: value), '#' and '!' comments, and a line ending
    in a backslash continued on the next (as JAAS settings are usually written)."""
    values = {}
    pending = ""
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = pending + line.strip()
        trailing = len(line) - len(line.rstrip("\\"))
        is_comment = not pending and line[:1] in ("#", "!")
        if trailing % 2 == 1 and not is_comment:
            pending = line[:-1]
            continue
        pending = ""
        if not line or line[0] in "#!":
            continue
        for separator in ("=", ":"):
            if separator in line:
                name, value = line.split(separator, 1)
                values[name.strip()] = value.strip()
                break
        else:
            raise PropertiesError(f"{path}:{number}: expected name=value")
    return values
