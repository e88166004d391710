"""The authorizer's broker settings, under Kafka's names (merged into broker/config.py's table).

``authorizer.class.name`` accepts Kafka 4's one built-in authorizer, StandardAuthorizer, or
nothing. ``kafka.security.authorizer.AclAuthorizer`` was ZooKeeper's and is gone from Kafka 4
(a Kafka 4 broker fails to start with it), so it is refused here too, saying why.
"""

from __future__ import annotations

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_REMOVED = "kafka.security.authorizer.AclAuthorizer"


def _authorizer_class(text: str) -> str:
    name = text.strip()
    if name in ("", STANDARD_AUTHORIZER):
        return name
    if name == _REMOVED:
        raise ValueError(f"{_REMOVED} was removed in Kafka 4 (ZooKeeper); use {STANDARD_AUTHORIZER}")
    raise ValueError(f"unknown authorizer class; the one supported is {STANDARD_AUTHORIZER}")


def _super_users(text: str) -> tuple[str, ...]:
    """Semicolon-separated principals (``User:alice;User:CN=bob,O=acme``), as Kafka splits them."""
    return tuple(user.strip() for user in text.split(";") if user.strip())


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return value == "true"


#: name -> (parse, default, doc), as config.Setting takes them
ACL_SETTINGS = {
    "authorizer.class.name": (_authorizer_class, "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer "
                              "turns ACL authorization on; empty = every principal may do everything"),
    "super.users": (_super_users, (), "principals the authorizer allows everything, separated by ';'"),
    "allow.everyone.if.no.acl.found": (_bool, False, "allow an operation on a resource that has no ACL at all"),
}
