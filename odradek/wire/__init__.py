"""Sans-IO Kafka codec: bytes <-> typed messages. Imports nothing from broker or coordinator.

`_generated/` holds one module per API produced by `tools/codegen` from Kafka's JSON specs;
import them lazily through `odradek.wire.registry` or directly by module.
"""

from odradek.wire._generated.api_keys import API_SPECS, ApiKey
from odradek.wire._generated.error_codes import ErrorCode
from odradek.wire.exceptions import ProtocolError, RecordBatchError

__all__ = ["API_SPECS", "ApiKey", "ErrorCode", "ProtocolError", "RecordBatchError"]
