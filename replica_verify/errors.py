"""The verifier's failures: one type per cause, each message naming the problem and the fix.

Failure: these are what the package raises; the CLI prints them as one ``Error:`` line.
"""

from __future__ import annotations


class VerifyError(Exception):
    """Verification could not run (bad option, broker unreachable, cluster changed)."""


class InvalidOption(VerifyError):
    """An option value the tool cannot use."""


class BrokerUnreachable(VerifyError):
    """A broker refused the connection, dropped it, or did not answer in time."""


class ProtocolError(VerifyError):
    """A broker answered something the tool cannot use (version, error code, framing)."""
