"""``multiRead``'s request is byte for byte what kazoo's own request classes write for it (a
``MultiHeader`` + ``GetData(path, None)`` per op, then the done header), and its reply is read as
kazoo's ``MultiHeader``/``read_buffer`` read one: data, an empty node (``None``), a missing node's
error, at any offset (kafka_zk/multi_read.py packs and reads them inline for speed)."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import GetData, MultiHeader, int_struct, multiheader_struct, stat_struct
from kazoo.protocol.states import ZnodeStat

from kafka_zk.multi_read import MultiReadRequest

PATHS = ("/brokers/topics/t/partitions/0/state", "", "/", "/ü/é-1", "/kafka-rehearsal-x/brokers/ids/7")


def test_the_request_is_what_kazoos_classes_write() -> None:
    for paths in (PATHS, (), PATHS[:1]):
        expected = bytearray()
        for p in paths:
            expected.extend(MultiHeader(GetData.type, False, -1).serialize())
            expected.extend(GetData(p, None).serialize())
        expected.extend(multiheader_struct.pack(-1, True, -1))
        assert MultiReadRequest(paths).serialize() == expected


def test_the_reply_reads_data_an_empty_node_and_a_missing_one_at_any_offset() -> None:
    stat = tuple(range(1, 12))
    reply = bytearray(b"\x00\x00\x00")                                   # an offset of 3
    reply += multiheader_struct.pack(GetData.type, 0, 0) + int_struct.pack(3) + b"abc" + stat_struct.pack(*stat)
    reply += multiheader_struct.pack(GetData.type, 0, 0) + int_struct.pack(-1) + stat_struct.pack(*stat)
    reply += multiheader_struct.pack(-1, 0, -1) + int_struct.pack(NoNodeError.code)
    reply += multiheader_struct.pack(GetData.type, 0, 0) + int_struct.pack(0) + stat_struct.pack(*stat)
    reply += multiheader_struct.pack(-1, 1, -1)
    got = MultiReadRequest.deserialize(bytes(reply), 3)
    assert got[0] == (b"abc", ZnodeStat(*stat)) and got[1] == (None, ZnodeStat(*stat))
    assert isinstance(got[2], NoNodeError) and got[3] == (b"", ZnodeStat(*stat)) and len(got) == 4
