"""The CLI's secured-cluster options: a JAAS file and --zk-set-acl; refusals name the flag and
the fix, never the file's content (run on a ZooKeeper that requires SASL in tests/secured)."""

from __future__ import annotations

import pytest

from cli.main import main

JAAS = 'Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n username="k"\n password="Sup3r-S3cret-cli";\n};\n'


@pytest.mark.parametrize("extra, fragment", [
    (["--zk-set-acl"], "--zk-set-acl needs --zk-jaas"),
    (["--zk-jaas", "/nonexistent/jaas.conf"], "--zk-jaas /nonexistent/jaas.conf: cannot read it"),
    (["--zk-jaas", "{jaas}", "--zk-jaas-section", "KafkaClient"], "has no section 'KafkaClient' (it has: Client)"),
])
def test_bad_auth_options_fail_before_connecting_naming_the_flag(tmp_path, capsys, extra, fragment):
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    extra = [str(jaas) if a == "{jaas}" else a for a in extra]
    assert main(["topics", "--list", "--zookeeper", "127.0.0.1:1/kafka", *extra]) == 1
    err = capsys.readouterr().err
    assert fragment in err and "Sup3r-S3cret-cli" not in err
