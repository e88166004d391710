"""Kafka's ``sasl.jaas.config`` syntax, parsed (never executed).

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

One or more login modules, each ``<class> <flag> [name=value ...];``, values quoted or
bare, as Kafka's ``JaasConfig`` reads them with a ``StreamTokenizer``. Only the option
values are used: PLAIN's users are its ``user_<name>="<password>"`` options, as Kafka's
``PlainServerCallbackHandler`` reads them. The class name is checked against the
mechanism's module so that a misplaced configuration fails at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

FLAGS = ("required", "requisite", "sufficient", "optional")
MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}

_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str]


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    pos, end = 0, len(text.rstrip())
    while pos < end:
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"JAAS config: unexpected character at {pos}")
        pos = match.end()
        quoted, word, equals, semicolon = match.groups()
        if quoted is not None:
            yield "value", re.sub(r"\\(.)", r"\1", quoted)
        elif word is not None:
            yield "word", word
        else:
            yield ("=" if equals else ";"), ""


def parse_jaas(text: str) -> list[LoginModule]:
    """The login modules of ``text``; ValueError (without option values in it) when malformed."""
    modules: list[LoginModule] = []
    tokens = list(_tokens(text))
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise ValueError("JAAS config: expected '<LoginModule class> <control flag>'")
        class_name, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in FLAGS:
            raise ValueError(f"JAAS config: invalid control flag {flag!r}")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" \
                    or tokens[i + 2][0] not in ("word", "value"):
                raise ValueError(f"JAAS config: expected name=value in the options of {class_name}")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError(f"JAAS config: the entry of {class_name} must end with ';'")
        i += 1
        modules.append(LoginModule(class_name, flag, options))
    if not modules:
        raise ValueError("JAAS config: no login module")
    return modules


def plain_users(text: str) -> dict[str, str]:
    """PLAIN's users and passwords: the ``user_<name>`` options of its login module."""
    users = {}
    for module in parse_jaas(text):
        if module.class_name != MODULES["PLAIN"]:
            raise ValueError(f"JAAS config for PLAIN names {module.class_name}, expected {MODULES['PLAIN']}")
        users.update({name[5:]: password for name, password in module.options.items() if name.startswith("user_")})
    return users


def module_options(text: str, mechanism: str) -> dict[str, str]:
    """The options of ``mechanism``'s login module in ``text`` (OAUTHBEARER's unsecuredValidator*)."""
    options: dict[str, str] = {}
    for module in parse_jaas(text):
        if module.class_name != MODULES[mechanism]:
            raise ValueError(f"JAAS config for {mechanism} names {module.class_name}, expected {MODULES[mechanism]}")
        options.update(module.options)
    return options
