"""What a client-metrics subscription's ``match`` selectors are matched against (KIP-714)."""

from __future__ import annotations


def client_of(header, session) -> dict[str, str]:
    """The selector values of the client on this connection (the client instance id is added by
    ``instances``): its client id, the software it named in ApiVersions v3+, its address and port."""
    name, version = session.client_software if session is not None else ("", "")
    host, _, port = (session.peer if session is not None else "").rpartition(":")
    return {"client_id": header.client_id or "", "client_software_name": name, "client_software_version": version,
            "client_source_address": host, "client_source_port": port}
