"""The broker: anyio server shell, request dispatch, partitions and segment storage."""
