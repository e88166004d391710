"""Principals: ``User:ANONYMOUS`` until authenticated; a TLS client's certificate names it
``User:<subject DN>``, mapped by ``ssl.principal.mapping.rules``; SASL names it ``User:<user>``.

The DN is written as Java's ``X500Principal.getName()`` writes it (RFC 2253), which is what
Kafka's ``DefaultKafkaPrincipalBuilder`` uses: most specific RDN first (``CN=bob,OU=eng,O=acme,C=US``),
keywords CN, C, L, ST, O, OU, STREET, DC, UID, other attributes as ``<oid>=#<hex of the DER value>``,
``,+"\\<>;`` escaped with a backslash. Deviation: an unknown attribute's value is hex-encoded as
a UTF8String (Java keeps the string type the certificate used; emailAddress, the usual one,
is an IA5String and is encoded so).
"""

from __future__ import annotations

import re

ANONYMOUS = "User:ANONYMOUS"

# Python's ssl names (OpenSSL long names) -> RFC 2253 keywords and, for the rest, their OIDs.
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
             "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
         "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C), "givenName": ("2.5.4.42", 0x0C),
         "initials": ("2.5.4.43", 0x0C), "pseudonym": ("2.5.4.65", 0x0C), "generationQualifier": ("2.5.4.44", 0x0C),
         "dnQualifier": ("2.5.4.46", 0x13), "postalCode": ("2.5.4.17", 0x0C), "businessCategory": ("2.5.4.15", 0x0C)}


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(value: str, tag: int) -> str:
    data = value.encode("utf-8")
    length = bytes([len(data)]) if len(data) < 128 else bytes([0x81, len(data)]) if len(data) < 256 \
        else bytes([0x82]) + len(data).to_bytes(2, "big")
    return "#" + (bytes([tag]) + length + data).hex()


def _attribute(name: str, value: str) -> str:
    if name in _KEYWORDS:
        return f"{_KEYWORDS[name]}={_escape(value)}"
    oid, tag = _OIDS.get(name, (name, 0x0C))
    return f"{oid}={_der_hex(value, tag)}"


def subject_dn(peer_cert: dict) -> str:
    """RFC 2253 text of ``ssl.SSLObject.getpeercert()['subject']``."""
    rdns = peer_cert.get("subject", ())
    return ",".join("+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(rdns))


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: ``RULE:<regex>/<replacement>/[LU]`` entries and ``DEFAULT``,
    the first rule whose regex matches the whole DN wins; no match refuses the connection, as
    Kafka's ``SslPrincipalMapper`` raises NoMatchingRule."""

    _SPLIT = re.compile(r"\s*((DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,]*?|([^,]*?))\s*(?:,\s*|$)")

    def __init__(self, rules: str):
        self.rules: list[tuple[re.Pattern, str, str] | None] = []  # None = DEFAULT
        text = rules.strip()
        pos = 0
        while pos < len(text):
            match = self._SPLIT.match(text, pos)
            if match is None or match.end() == pos:
                raise ValueError(f"Invalid rule: {text[pos:]}")
            pos = match.end()
            if match.group(2):
                self.rules.append(None)
            elif match.group(3) is not None:
                replacement = re.sub(r"\$(\d)", r"\\g<\1>", match.group(4))  # Java's $1 is Python's \g<1>
                self.rules.append((re.compile(match.group(3)), replacement, match.group(5)))
            elif match.group(6):
                raise ValueError(f"Invalid rule: {match.group(6)}")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule is None:
                return dn
            pattern, replacement, case = rule
            if pattern.fullmatch(dn):
                result = pattern.sub(replacement, dn)
                return result.lower() if case == "L" else result.upper() if case == "U" else result
        raise PermissionError(f"No rules apply to {dn}")
