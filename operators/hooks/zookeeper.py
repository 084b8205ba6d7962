"""ZooKeeperHook: an Airflow Connection → a started kazoo client on a Kafka cluster's ZooKeeper.

The connection (type ``kafka_zookeeper``) names the ensemble and the cluster's chroot:

* ``host``: ``zk1:2181,zk2:2181`` (or ``zk1,zk2`` with ``port`` as the default port);
* ``port``: default port for hosts given without one (2181 when empty);
* ``login`` / ``password``: optional digest credentials (the principal that owns Kafka's znodes
  when ``zookeeper.set.acl=true``); ``extra.digest`` = ``"user:password"`` works too;
* ``extra``: ``chroot`` (``/kafka``, the chroot of Kafka's ``zookeeper.connect``),
  ``connect_timeout`` and ``session_timeout`` in seconds (10 each by default), ``read_only``.

In tests and on the command line the connection comes from an environment variable in JSON form::

    AIRFLOW_CONN_KAFKA_ZK='{"conn_type": "kafka_zookeeper", "host": "127.0.0.1:2181",
                            "extra": {"chroot": "/kafka"}}'

Failure: a connection without hosts, a bad port, chroot or timeout raises :class:`InvalidInput`
naming the connection id and the field to fix; an unreachable ensemble raises
:class:`ZkUnavailable` (from :func:`kafka_zk.connect.connect`) after ``connect_timeout``.
The client is built once per hook (``get_conn`` caches it); :meth:`close` stops it.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.connect import close as close_client
from kafka_zk.connect import connect, parse_connect_string
from kafka_zk.errors import InvalidInput, KafkaZkError

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
                "extra": '{"chroot": "/kafka", "connect_timeout": 10, "session_timeout": 10}',
            },
        }

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
        auth = None
        digest = extra.get("digest")
        if conn.login:
            auth = [("digest", f"{conn.login}:{conn.password or ''}")]
        elif digest:
            if ":" not in str(digest):
                raise InvalidInput(f"{where}: extra digest must be 'user:password'")
            auth = [("digest", str(digest))]
        return {"connect_string": connect_string, "auth": auth, "read_only": bool(extra.get("read_only", False)),
                **timeouts}

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
                                   session_timeout=s["session_timeout"], auth=s["auth"],
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
