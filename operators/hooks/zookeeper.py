"""ZooKeeperHook: an Airflow Connection → a started kazoo client on a Kafka cluster's ZooKeeper.

The connection (type ``kafka_zookeeper``) names the ensemble and the cluster's chroot:

* ``host``: ``zk1:2181,zk2:2181`` (or ``zk1,zk2`` with ``port`` as the default port);
* ``port``: default port for hosts given without one (2181 when empty);
* ``login`` / ``password``: optional credentials, SASL when ``extra.sasl_mechanism`` is set,
  digest otherwise; ``extra.digest`` = ``"user:password"`` works too;
* ``extra``: ``chroot`` (``/kafka``, the chroot of Kafka's ``zookeeper.connect``),
  ``connect_timeout`` and ``session_timeout`` in seconds (10 each by default), ``read_only``;
  ``broker_capacity_bytes``: usable disk bytes per broker (``{"1": 1e12, "default": 2e12}``,
  :mod:`kafka_zk.capacity`), which plans keep every broker under; ``log_dirs_source``
  (``command:kafka-log-dirs.sh ... --describe``, ``file:<path>`` or ``emulator``): where wave
  progress reads follower log sizes (:mod:`procedures.plan.log_dirs_source`);
* secured clusters (docs/connections.md): ``sasl_mechanism`` (``DIGEST-MD5`` with login/password,
  or ``GSSAPI`` with ``extra.sasl_principal`` and a Kerberos ticket cache), or ``jaas``: the text
  of a JAAS file whose ``jaas_section`` (default ``Client``) names the login module and its
  options, as Kafka's brokers read it; ``sasl_service`` (default ``zookeeper``, Kafka's
  ``zookeeper.sasl.client.username``); ``set_acl`` (Kafka's ``zookeeper.set.acl``): what we
  create carries Kafka's ACLs.

Secrets (the password, the JAAS text) are registered with Airflow's secrets masker when read,
and never put in a message: errors name the connection and the field, never its value.

In tests and on the command line the connection comes from an environment variable in JSON form::

    AIRFLOW_CONN_KAFKA_ZK='{"conn_type": "kafka_zookeeper", "host": "127.0.0.1:2181",
                            "extra": {"chroot": "/kafka"}}'

Failure: a connection without hosts, a bad port, chroot or timeout raises :class:`InvalidInput`
naming the connection id and the field to fix; an unreachable ensemble raises
:class:`ZkUnavailable` (from :func:`kafka_zk.connect.connect`) after ``connect_timeout``.
The client is built once per hook (``get_conn`` caches it); :meth:`close` stops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.capacity import DiskCapacity, parse_capacity
from kafka_zk.connect import close as close_client, connect, parse_connect_string
from kafka_zk.errors import InvalidInput, KafkaZkError
from kafka_zk.zk_auth import DIGEST_MD5, GSSAPI, NO_AUTH, ZkCredentials, parse_jaas_section
from procedures.plan.log_dirs_source import parse_log_dirs_source

if TYPE_CHECKING:
    from procedures.plan.log_dirs_source import LogDirsSource

DEFAULT_PORT = 2181


class ZooKeeperHook(BaseHook):
    """Builds the project's kazoo client (one retry policy, bounded timeouts) from a Connection."""

    conn_name_attr = "zk_conn_id"
    default_conn_name = "kafka_zookeeper_default"
    conn_type = "kafka_zookeeper"
    hook_name = "Kafka ZooKeeper"

    def __init__(self, zk_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not zk_conn_id:
            raise InvalidInput("zk_conn_id is empty: name the Airflow connection of the cluster's ZooKeeper")
        self.zk_conn_id = zk_conn_id
        self._client: KazooClient | None = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema"],
            "relabeling": {"host": "ZooKeeper hosts", "login": "Digest user", "password": "Digest password"},
            "placeholders": {
                "host": "zk1:2181,zk2:2181,zk3:2181",
                "port": "2181 (default for hosts without a port)",
                "login": "optional: digest ACL user",
                "extra": '{"chroot": "/kafka", "connect_timeout": 10, "session_timeout": 10, '
                         '"sasl_mechanism": "DIGEST-MD5", "set_acl": true}',
            },
        }

    def broker_capacity(self, threshold_pct: Any = None) -> DiskCapacity | None:
        """``extra.broker_capacity_bytes`` as a :class:`DiskCapacity`, or None when not set."""
        extra = self.get_connection(self.zk_conn_id).extra_dejson or {}
        raw = extra.get("broker_capacity_bytes")
        if raw is None:
            return None
        return parse_capacity({"brokers": raw}, f"connection {self.zk_conn_id}: extra broker_capacity_bytes",
                              threshold_pct)

    def log_dirs_source(self) -> "LogDirsSource | None":
        """``extra.log_dirs_source``: where follower log sizes are read for wave progress
        (:mod:`procedures.plan.log_dirs_source`), or None when not set."""

        extra = self.get_connection(self.zk_conn_id).extra_dejson or {}
        return parse_log_dirs_source(extra, f"connection {self.zk_conn_id!r}")

    # -- settings read from the connection ---------------------------------------------------

    def _settings(self) -> dict[str, Any]:
        conn = self.get_connection(self.zk_conn_id)
        extra = conn.extra_dejson or {}
        where = f"connection {self.zk_conn_id!r}"
        if not conn.host or not conn.host.strip():
            raise InvalidInput(f"{where} has no host: set host to the ZooKeeper ensemble, "
                               "e.g. zk1:2181,zk2:2181")
        default_port = conn.port or DEFAULT_PORT
        hosts = []
        for item in conn.host.split(","):
            item = item.strip()
            if not item:
                continue
            if ":" not in item or item.endswith("]"):
                item = f"{item}:{default_port}"
            hosts.append(item)
        chroot = str(extra.get("chroot") or "").rstrip("/")
        connect_string = ",".join(hosts) + chroot
        try:
            parse_connect_string(connect_string)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        timeouts = {}
        for key in ("connect_timeout", "session_timeout"):
            value = extra.get(key, 10)
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = -1.0
            if not 0 < value <= 600:
                raise InvalidInput(f"{where}: extra {key}={extra.get(key)!r} must be seconds in (0, 600]")
            timeouts[key] = value
        return {"connect_string": connect_string, "credentials": self._credentials(conn, extra, where),
                "read_only": bool(extra.get("read_only", False)), **timeouts}

    @staticmethod
    def _credentials(conn: Any, extra: dict[str, Any], where: str) -> ZkCredentials:
        """SASL (JAAS text or mechanism + login/password), digest, or none; secrets masked."""
        from airflow.sdk.log import mask_secret

        set_acl = extra.get("set_acl", False)
        if set_acl not in (True, False, "true", "false", "True", "False"):
            raise InvalidInput(f"{where}: extra set_acl must be true or false (Kafka's zookeeper.set.acl)")
        set_acl = str(set_acl).lower() == "true"
        service = str(extra.get("sasl_service") or "zookeeper")
        mechanism = extra.get("sasl_mechanism")
        jaas, digest = extra.get("jaas"), extra.get("digest")
        for secret in (conn.password, jaas, digest):
            if secret:
                mask_secret(secret)
        try:
            if jaas:
                if mechanism or conn.login:
                    raise InvalidInput("give either extra jaas or sasl_mechanism/login, not both")
                return parse_jaas_section(str(jaas), str(extra.get("jaas_section") or "Client"),
                                          service, set_acl)
            if mechanism:
                mechanism = str(mechanism).upper()
                if mechanism == GSSAPI:
                    return ZkCredentials(GSSAPI, principal=extra.get("sasl_principal") or conn.login or None,
                                         service=service, set_acl=set_acl)
                if mechanism == DIGEST_MD5 and not (conn.login and conn.password):
                    raise InvalidInput("SASL DIGEST-MD5 needs login (the JAAS username) and password")
                return ZkCredentials(mechanism, username=conn.login, password=conn.password,
                                     service=service, set_acl=set_acl)
            if conn.login:
                return ZkCredentials(digest_user=conn.login, digest_password=conn.password or "",
                                     set_acl=set_acl)
            if digest:
                if ":" not in str(digest):
                    raise InvalidInput("extra digest must be 'user:password'")
                user, _, password = str(digest).partition(":")
                return ZkCredentials(digest_user=user, digest_password=password, set_acl=set_acl)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        if set_acl:
            raise InvalidInput(f"{where}: extra set_acl=true needs credentials (Kafka creates its znodes "
                               "as the authenticated principal): set sasl_mechanism with login/password, "
                               "or jaas")
        return NO_AUTH

    @property
    def connect_string(self) -> str:
        """``host:port,...[/chroot]`` as Kafka's ``zookeeper.connect`` would say it."""
        return self._settings()["connect_string"]

    # -- the client --------------------------------------------------------------------------

    def get_conn(self) -> KazooClient:
        """A started kazoo client on the cluster's chroot (cached for the hook's life)."""
        if self._client is None:
            s = self._settings()
            self._client = connect(s["connect_string"], timeout=s["connect_timeout"],
                                   session_timeout=s["session_timeout"], credentials=s["credentials"],
                                   read_only=s["read_only"])
        return self._client

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            close_client(client)

    def __enter__(self) -> "ZooKeeperHook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def test_connection(self) -> tuple[bool, str]:
        """Connect, list the registered brokers and the controller; never raises."""
        try:
            client = self.get_conn()
            brokers = sorted(int(b) for b in client.get_children(paths.BROKER_IDS)) \
                if client.exists(paths.BROKER_IDS) else []
            controller = client.get(paths.CONTROLLER)[0].decode() if client.exists(paths.CONTROLLER) else None
        except KafkaZkError as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - test_connection reports, it does not raise
            return False, f"{type(exc).__name__}: {exc}"
        finally:
            self.close()
        if not brokers:
            return False, (f"Connected to {self.connect_string}, but no broker is registered under "
                           f"{paths.BROKER_IDS}: check the chroot (extra.chroot)")
        return True, f"Connected to {self.connect_string}: brokers {brokers}, controller {controller or 'none'}"
