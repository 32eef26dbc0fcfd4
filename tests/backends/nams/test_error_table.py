"""The one error table (``wire.ERRORS``) drives both the client transport and the server."""

from __future__ import annotations

import pytest

from memory_core import (
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    StoreError,
    TransportError,
)
from memory_core import nams_wire as wire


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, InvalidRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, NotFoundError),
        (405, NotSupportedError),
        (409, ConflictError),
        (413, InvalidRequestError),
        (422, InvalidRequestError),
        (429, RateLimitedError),
        (500, TransportError),
        (501, NotSupportedError),
        (502, TransportError),  # not in the table: any other status is a transport failure
        (503, TransportError),
    ],
)
def test_client_reads_each_status_from_the_table(status: int, error: type[Exception]) -> None:
    assert wire.error_for_status(status) is error


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (NotFoundError("gone"), 404, wire.ErrorCode.NOT_FOUND),
        (InvalidRequestError("bad", argument="x"), 400, wire.ErrorCode.INVALID_REQUEST),
        (ConflictError("taken", argument="name"), 409, wire.ErrorCode.CONFLICT),
        (NotSupportedError("b", "m", "no", "w"), 501, wire.ErrorCode.NOT_SUPPORTED),
        # the backing store refusing the server's own credentials is the server's problem
        (AuthenticationError("store said no"), 503, wire.ErrorCode.UNAVAILABLE),
        (RateLimitedError("slow down"), 503, wire.ErrorCode.UNAVAILABLE),
        (TransportError("down"), 503, wire.ErrorCode.UNAVAILABLE),
        (StoreError("schema"), 503, wire.ErrorCode.UNAVAILABLE),
    ],
)
def test_server_answers_store_errors_from_the_table(
    error: Exception, status: int, code: wire.ErrorCode
) -> None:
    kind = wire.answer_for(error)  # type: ignore[arg-type]
    assert (kind.status, kind.code) == (status, code)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, wire.ErrorCode.INVALID_REQUEST),
        (401, wire.ErrorCode.UNAUTHORIZED),
        (404, wire.ErrorCode.NOT_FOUND),
        (405, wire.ErrorCode.METHOD_NOT_ALLOWED),
        (409, wire.ErrorCode.CONFLICT),
        (413, wire.ErrorCode.PAYLOAD_TOO_LARGE),
        (429, wire.ErrorCode.RATE_LIMITED),
        (503, wire.ErrorCode.UNAVAILABLE),
    ],
)
def test_server_codes_come_from_the_table(status: int, code: wire.ErrorCode) -> None:
    assert wire.code_for_status(status) is code


def test_what_the_server_answers_the_client_reads_back_as_the_same_error() -> None:
    for kind in wire.ERRORS:
        if kind.served:
            assert wire.error_for_status(kind.status) is kind.error


def test_every_envelope_code_has_a_row() -> None:
    missing = set(wire.ErrorCode) - {kind.code for kind in wire.ERRORS}
    assert not missing, f"error codes without a status in wire.ERRORS: {sorted(missing)}"
