"""ApiVersions advertises exactly the handler registry's ranges, pinned here.

The ranges come from `registry.HANDLERS`, each capped at the api's highest stable version in
the generated `API_SPECS`; regenerating the codec from newer specs (more versions, other
versions marked unstable) must not change them: a handler's range moves only when its
registry entry does, and then this table with it.
"""

from __future__ import annotations

from pathlib import Path

from admin_testutil import call, open_broker

from odradek.broker.api.api_versions import unsupported_version_response
from odradek.broker.registry import HANDLERS, advertised
from odradek.wire import API_SPECS, ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest

ADVERTISED = [
    (0, 3, 11), (1, 4, 18), (2, 0, 10), (3, 0, 12), (8, 0, 9), (9, 0, 9), (10, 0, 6), (11, 0, 9),
    (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 5), (16, 0, 5), (18, 0, 4), (19, 0, 7),
    (20, 0, 6), (21, 0, 2), (22, 0, 5), (23, 0, 4), (24, 0, 5), (25, 0, 4), (26, 0, 4),
    (28, 0, 4), (29, 0, 3), (30, 0, 3), (31, 0, 3), (32, 0, 4), (33, 0, 2), (35, 0, 4),
    (37, 0, 3), (42, 0, 2), (44, 0, 1), (47, 0, 0), (60, 0, 1), (61, 0, 0), (65, 0, 0),
    (66, 0, 1),
]


def test_the_advertised_ranges_are_the_pinned_ones() -> None:
    assert list(advertised()) == ADVERTISED


def test_no_unstable_version_is_advertised() -> None:
    for key, _low, high in advertised():
        assert high <= API_SPECS[key].max_stable_version, key
    # InitProducerId v6 is unstable in Kafka 4.4's specs: the handler's 0-5 stays 0-5.
    assert API_SPECS[ApiKey.INIT_PRODUCER_ID].latest_version_unstable
    assert HANDLERS[ApiKey.INIT_PRODUCER_ID].max_version == 5


def test_api_versions_answers_with_the_pinned_ranges_at_every_version(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    for version in range(HANDLERS[ApiKey.API_VERSIONS].max_version + 1):
        response = call(broker, ApiKey.API_VERSIONS, version, request)
        assert response.error_code == ErrorCode.NONE
        got = [(a.api_key, a.min_version, a.max_version) for a in response.api_keys]
        assert got == ADVERTISED, version


def test_the_unsupported_version_answer_lists_the_same_ranges() -> None:
    response = unsupported_version_response()
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(a.api_key, a.min_version, a.max_version) for a in response.api_keys] == ADVERTISED
