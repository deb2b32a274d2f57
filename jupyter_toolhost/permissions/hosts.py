"""Hosts compared as addresses: one canonical form for every spelling of a host.

A URL's host and a ``WebFetch(domain:...)`` rule's domain both go through `canonical_host`:
lower case, trailing dots dropped, international names in their IDNA (``xn--``) form, and IP
addresses in every spelling the C library's ``inet_aton`` accepts (``127.1``,
``2130706433``, ``0x7f000001``, ``0177.0.0.1``) or in brackets (``[::ffff:127.0.0.1]``,
an IPv4 address inside IPv6) written as the address itself. Every loopback spelling
(``localhost`` and its subdomains, ``127.0.0.0/8``, ``::1``, and ``0.0.0.0``, which Linux
connects to the loopback) is the one host `LOOPBACK`.

`internal` says whether a host is not on the public internet (loopback, private, link-local,
unspecified, reserved, multicast, shared): such a host needs an explicit allow rule, as Claude
Code refuses them by default. Not covered: a public name whose DNS answer is such an
address (``127.0.0.1.nip.io``); no rule sees DNS, and Bash's sandbox has no network at all.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

LOOPBACK = "localhost"
"""The canonical form of every loopback host."""

_INET_PART = re.compile(r"^(?:0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$")


@lru_cache(maxsize=4096)
def canonical_host(host: str) -> str:
    """The form hosts and domain rules are compared in (see the module's docstring)."""
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.rstrip(".")
    address = parse_address(text)
    if address is not None:
        return LOOPBACK if address.is_loopback or address.is_unspecified else str(address)
    if text == LOOPBACK or text.endswith("." + LOOPBACK):
        return LOOPBACK
    if not text.isascii():
        try:
            text = text.encode("idna").decode("ascii")
        except UnicodeError:
            return text
    return text


def parse_address(
    text: str,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`text` as an IP address in any spelling a resolver accepts, or None for a name."""
    text = text.split("%", 1)[0]  # an IPv6 zone id
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        address = _inet_aton(text)
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return mapped
        if address.packed[:12] == bytes(12) and int(address) > 1:  # ::a.b.c.d (compat)
            return ipaddress.IPv4Address(address.packed[12:])
    return address


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """inet_aton's forms: 1 to 4 parts, each decimal, octal (``0``) or hex (``0x``)."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_INET_PART.match(p) for p in parts):
        return None
    try:
        values = [int(p, 0) if not (len(p) > 1 and p[0] == "0" and p[1] not in "xX")
                  else int(p, 8) for p in parts]  # fmt: skip
    except ValueError:
        return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(parts)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    number = (number << (8 * (5 - len(parts)))) | last
    return ipaddress.IPv4Address(number)


def internal(host: str) -> bool:
    """Whether the canonical `host` is not a public internet host (see the docstring)."""
    if host == LOOPBACK:
        return True
    address = parse_address(host)
    if address is None:
        return False
    return not address.is_global or address.is_multicast
