"""JAAS sections and credentials: what Kafka's JAAS files say, secrets never in reprs or errors."""

from __future__ import annotations

import pytest

from kafka_zk.errors import InvalidInput
from kafka_zk.zk_auth import DIGEST_MD5, GSSAPI, ZkCredentials, parse_jaas_section, parse_jaas_sections

SECRET = "p@ss \"quoted\" w0rd"
_ESCAPED = SECRET.replace('"', '\\"')
JAAS = f"""
// the broker's JAAS file
KafkaServer {{
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin" password="admin-secret";
}};
/* ZooKeeper client section */
Client {{
   org.apache.zookeeper.server.auth.DigestLoginModule required
   username="kafka"
   password="{_ESCAPED}";
}};
KerberosClient {{
   com.sun.security.auth.module.Krb5LoginModule required
   useKeyTab=true keyTab="/etc/security/kafka.keytab" storeKey=true
   principal="kafka/broker1.example.com@EXAMPLE.COM";
}};
"""


def test_client_section_gives_digest_md5_credentials_and_repr_hides_the_password():
    creds = parse_jaas_section(JAAS, set_acl=True)
    assert (creds.mechanism, creds.username, creds.password, creds.set_acl) == (DIGEST_MD5, "kafka", SECRET, True)
    assert creds.kazoo_kwargs() == {"sasl_options": {"mechanism": DIGEST_MD5, "username": "kafka",
                                                     "password": SECRET, "service": "zookeeper"}}
    assert SECRET not in repr(creds) and SECRET not in creds.describe()


def test_kerberos_section_gives_gssapi_with_the_principal_and_the_service():
    creds = parse_jaas_section(JAAS, "KerberosClient", service="zk")
    assert creds.kazoo_kwargs() == {"sasl_options": {"mechanism": GSSAPI, "service": "zk",
                                                     "principal": "kafka/broker1.example.com@EXAMPLE.COM"}}


def test_sections_are_all_read():
    assert sorted(parse_jaas_sections(JAAS)) == ["Client", "KafkaServer", "KerberosClient"]


@pytest.mark.parametrize("text, section, fragment", [
    (JAAS, "Nope", "no section 'Nope' (it has: Client, KafkaServer, KerberosClient)"),
    (JAAS, "KafkaServer", "is not one ZooKeeper clients use"),
    ('Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka"; };', "Client",
     "needs username"),
    (f'Client {{ org.apache.zookeeper.server.auth.DigestLoginModule required password="{SECRET[:4]}" }};',
     "Client", "is not key=value"),
    (f'Client  org.x required password="{SECRET[:4]}";', "Client", "expected '{'"),
])
def test_bad_jaas_is_refused_naming_the_fix_never_echoing_the_text(text, section, fragment):
    with pytest.raises(InvalidInput) as err:
        parse_jaas_section(text, section)
    assert fragment in str(err.value)
    assert SECRET[:4] not in str(err.value)


def test_digest_credentials_and_bad_combinations():
    creds = ZkCredentials(digest_user="kafka", digest_password="pw", set_acl=True)
    assert creds.kazoo_kwargs() == {"auth_data": [("digest", "kafka:pw")]}
    assert "pw" not in repr(creds)
    with pytest.raises(InvalidInput, match="not supported"):
        ZkCredentials("PLAIN", username="a", password="b")
    with pytest.raises(InvalidInput, match="needs a username and a password"):
        ZkCredentials(DIGEST_MD5, username="a")
