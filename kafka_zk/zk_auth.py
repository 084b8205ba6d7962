"""How a session authenticates to a secured ZooKeeper: SASL (DIGEST-MD5, GSSAPI) or digest.

:class:`ZkCredentials` is the one value that carries a secret through the project. Its
``repr`` and :meth:`ZkCredentials.describe` never show a password; nothing here puts a secret in
an exception message. :func:`parse_jaas_section` reads the client section of a JAAS file, the
way Kafka's brokers and tools are configured (``-Djava.security.auth.login.config``)::

    Client {
      org.apache.zookeeper.server.auth.DigestLoginModule required
      username="kafka"
      password="kafka-secret";
    };

* ``DigestLoginModule`` gives SASL DIGEST-MD5 with ``username``/``password``;
* ``com.sun.security.auth.module.Krb5LoginModule`` gives SASL GSSAPI with ``principal``; kazoo
  (through pure-sasl and the ``kerberos`` package) uses the process's Kerberos ticket cache,
  so the keytab named in the section must be turned into a ticket first (``kinit -kt``).

``set_acl`` says the cluster runs with ``zookeeper.set.acl=true``: what we create then carries
Kafka's ACLs (:mod:`kafka_zk.acls`).

Failure: :class:`InvalidInput` naming the section, the option or the module to fix, never the
text of the JAAS file nor a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kafka_zk.errors import InvalidInput

DIGEST_MD5, GSSAPI = "DIGEST-MD5", "GSSAPI"
MECHANISMS = (DIGEST_MD5, GSSAPI)
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
DEFAULT_SERVICE = "zookeeper"


@dataclass(frozen=True)
class ZkCredentials:
    """A session's identity: SASL (``mechanism`` set) or digest (``digest_user``)."""

    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    principal: str | None = None
    service: str = DEFAULT_SERVICE
    digest_user: str | None = None
    digest_password: str | None = field(default=None, repr=False)
    set_acl: bool = False

    def __post_init__(self) -> None:
        if self.mechanism is not None and self.mechanism not in MECHANISMS:
            raise InvalidInput(f"SASL mechanism {self.mechanism!r} is not supported: use one of "
                               f"{', '.join(MECHANISMS)}")
        if self.mechanism == DIGEST_MD5 and (not self.username or self.password is None):
            raise InvalidInput("SASL DIGEST-MD5 needs a username and a password")
        if self.mechanism is not None and self.digest_user is not None:
            raise InvalidInput("give SASL or digest credentials, not both")

    @property
    def authenticated(self) -> bool:
        return self.mechanism is not None or self.digest_user is not None

    def describe(self) -> str:
        """Who we authenticate as, without any secret (for messages and logs)."""
        if self.mechanism == DIGEST_MD5:
            return f"SASL {DIGEST_MD5} user {self.username!r}"
        if self.mechanism == GSSAPI:
            return f"SASL {GSSAPI} principal {self.principal or '(ticket cache default)'!r}"
        if self.digest_user is not None:
            return f"digest user {self.digest_user!r}"
        return "no authentication"

    def kazoo_kwargs(self) -> dict[str, Any]:
        """``sasl_options`` / ``auth_data`` for :class:`kazoo.client.KazooClient`."""
        if self.mechanism == DIGEST_MD5:
            return {"sasl_options": {"mechanism": DIGEST_MD5, "username": self.username,
                                     "password": self.password, "service": self.service}}
        if self.mechanism == GSSAPI:
            opts = {"mechanism": GSSAPI, "service": self.service}
            if self.principal:
                opts["principal"] = self.principal
            return {"sasl_options": opts}
        if self.digest_user is not None:
            return {"auth_data": [("digest", f"{self.digest_user}:{self.digest_password or ''}")]}
        return {}


NO_AUTH = ZkCredentials()

_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[{};=]|[^\s{};="]+', re.S)


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if t.strip() and not t.startswith(("//", "/*"))]


def parse_jaas_sections(text: str) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """``{section: [(login module, options), ...]}`` of a JAAS configuration text."""
    toks, i, out = _tokens(text), 0, {}

    def bad(what: str) -> InvalidInput:
        return InvalidInput(f"JAAS configuration: {what}; each section is written "
                            "Name { module.Class required key=\"value\" ...; };")
    while i < len(toks):
        name = toks[i]
        if i + 1 >= len(toks) or toks[i + 1] != "{":
            raise bad(f"expected '{{' after section name {name!r}")
        i += 2
        modules = []
        while i < len(toks) and toks[i] != "}":
            if i + 1 >= len(toks):
                raise bad(f"section {name!r} is not closed")
            module, i = toks[i], i + 2   # module class, then its flag (required, optional...)
            opts: dict[str, str] = {}
            while i < len(toks) and toks[i] != ";":
                if i + 2 >= len(toks) or toks[i + 1] != "=":
                    raise bad(f"section {name!r}: an option of {module} is not key=value")
                value = toks[i + 2]
                if value.startswith('"'):
                    value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
                opts[toks[i]] = value
                i += 3
            if i >= len(toks):
                raise bad(f"section {name!r}: the entry of {module} does not end with ';'")
            modules.append((module, opts))
            i += 1
        if i + 1 >= len(toks) or toks[i + 1] != ";":
            raise bad(f"section {name!r} must end with '}};'")
        out[name] = modules
        i += 2
    return out


def parse_jaas_section(text: str, section: str = "Client", service: str = DEFAULT_SERVICE,
                       set_acl: bool = False) -> ZkCredentials:
    """The credentials of one JAAS section (ZooKeeper clients read ``Client`` by default)."""
    sections = parse_jaas_sections(text)
    if section not in sections:
        raise InvalidInput(f"JAAS configuration has no section {section!r} (it has: "
                           f"{', '.join(sorted(sections)) or 'none'}); name the ZooKeeper client "
                           "section (Kafka's zookeeper.sasl.clientconfig, default Client)")
    if not sections[section]:
        raise InvalidInput(f"JAAS section {section!r} has no login module")
    module, opts = sections[section][0]
    if module == DIGEST_MODULE:
        if "username" not in opts or "password" not in opts:
            raise InvalidInput(f"JAAS section {section!r}: {DIGEST_MODULE} needs username=\"...\" "
                               "and password=\"...\"")
        return ZkCredentials(DIGEST_MD5, username=opts["username"], password=opts["password"],
                             service=service, set_acl=set_acl)
    if module == KRB5_MODULE:
        return ZkCredentials(GSSAPI, principal=opts.get("principal"), service=service, set_acl=set_acl)
    raise InvalidInput(f"JAAS section {section!r}: login module {module!r} is not one ZooKeeper "
                       f"clients use; use {DIGEST_MODULE} (DIGEST-MD5) or {KRB5_MODULE} (Kerberos)")
