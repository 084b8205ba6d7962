"""A refused SASL login is reported as refused however late the connecting thread looks.

kazoo creates the session first and logs in afterwards on its connection thread; when the
server refuses, that thread ends. A caller that wakes late (a busy machine, a busy interpreter)
finds no session, and kazoo's ``start()`` reports that as a connection time-out: CI once told a
user with a wrong password that ZooKeeper "did not answer within 5s". Here many connects with a
wrong password run while one busy process per CPU competes for the machine, which makes the late
wake-up common (before the fix about one connect in eight was misreported); every one of them
must name the refused login, never an unreachable server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafka_zk.connect import close, connect
from kafka_zk.errors import ZkAuthFailed
from kafka_zk.zk_auth import DIGEST_MD5, ZkCredentials

ATTEMPTS, AT_ONCE = 64, 24
BUSY = [sys.executable, "-c", "while True: pass"]


def _outcome(hosts: str, creds: ZkCredentials) -> str:
    try:
        close(connect(hosts, timeout=10, credentials=creds))
    except ZkAuthFailed as err:
        return "refused" if "refused the login of SASL DIGEST-MD5 user 'kafka'" in str(err) else str(err)
    except Exception as err:  # noqa: BLE001 - the test reports every other outcome by name
        return f"{type(err).__name__}: {err}"
    return "connected"


# kazoo's connection thread ends with the server's refusal, which pytest reports as a warning each
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_many_wrong_password_logins_on_a_busy_machine_are_all_reported_as_refused(
        secured_zk, secured_chroot):
    hosts = secured_zk.connect_string + secured_chroot
    wrong = ZkCredentials(DIGEST_MD5, username="kafka", password="not-the-password")
    busy = [subprocess.Popen(BUSY) for _ in range(os.cpu_count() or 2)]
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            outcomes = Counter(pool.map(lambda _: _outcome(hosts, wrong), range(ATTEMPTS)))
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert outcomes == Counter({"refused": ATTEMPTS})
