"""The emulator's kazoo handler answers ``select`` exactly as kazoo's own ``selector_select``.

Real sockets (socket pairs and a loopback TCP pair), no mocks: readable, writable, both asked,
nothing ready (timeout), the peer gone (hang-up), several objects on one descriptor, a closed
socket, bad timeouts — each asked of both functions, the answers compared.
"""

from __future__ import annotations

import socket

import pytest
from kazoo.handlers.utils import selector_select

from kafka_sim.zk_handler import EmulatorHandler, poll_select


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def both(*args):
    return selector_select(*args), poll_select(*args)


def test_nothing_ready_times_out_empty(pair):
    a, _ = pair
    assert both([a], [], [], 0) == (([], [], []), ([], [], []))
    assert both([a], [], [], 0.01) == (([], [], []), ([], [], []))


def test_readable_and_writable_as_kazoo_files_them(pair):
    a, b = pair
    b.send(b"x")
    for args in (([a], [], [], 0), ([], [a], [], 0), ([a], [a], [], 0), ([a, b], [b], [], 0),
                 ([b], [], [], 0), ([a, a], [], [], 0)):
        expected, got = both(*args)
        assert got == expected, args


def test_peer_gone_reads_as_kazoo_sees_it(pair):
    a, b = pair
    b.close()
    for args in (([a], [], [], 0), ([], [a], [], 0), ([a], [a], [], None)):
        expected, got = both(*args)
        assert got == expected, args


def test_tcp_reply_wakes_a_blocking_wait():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    try:
        peer.sendall(b"reply")
        assert poll_select([client], [], [], 5.0) == selector_select([client], [], [], 5.0) == ([client], [], [])
    finally:
        for s in (client, peer, server):
            s.close()


def test_closed_socket_and_bad_timeout_refused_as_kazoo_refuses(pair):
    a, _ = pair
    closed = socket.socket()
    closed.close()
    for fn in (selector_select, poll_select):
        with pytest.raises((TypeError, ValueError)):
            fn([closed], [], [], 0)
        with pytest.raises(ValueError):
            fn([a], [], [], -1)
        with pytest.raises(TypeError):
            fn([a], [], [], "1")


def test_handler_uses_it():
    a, b = socket.socketpair()
    try:
        b.send(b"x")
        assert EmulatorHandler().select([a], [], [], 0) == ([a], [], [])
    finally:
        a.close()
        b.close()


def test_a_kept_poll_object_answers_as_a_new_one_when_a_descriptor_number_comes_back():
    """The poll object kept for a set of descriptors (per thread) answers for whatever socket now
    holds those numbers: the second pair, given the first pair's numbers, is asked afresh."""
    a, b = socket.socketpair()
    fds = (a.fileno(), b.fileno())
    b.send(b"x")
    assert both([a, b], [], [], 0) == (([a], [], []), ([a], [], []))
    a.close()
    b.close()
    c, d = socket.socketpair()
    try:
        assert (c.fileno(), d.fileno()) == fds          # the numbers came back (lowest free first)
        assert both([c, d], [], [], 0) == (([], [], []), ([], [], []))     # nothing sent on this pair
        c.send(b"y")
        assert both([c, d], [], [], 0) == (([d], [], []), ([d], [], []))
        assert both([c, d], [c], [], 0) == (([d], [c, c], []), ([d], [c, c], []))     # c on both lists: kazoo files it twice
    finally:
        c.close()
        d.close()
