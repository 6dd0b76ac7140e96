# The C extension odradek/wire/_speedups.c (optional: records.py falls back to Python).
# Any object with the buffer protocol is accepted; records.py passes these.
_Buffer = bytes | bytearray | memoryview

def walk_records(
    data: _Buffer,
    pos: int,
    end: int,
    index: int,
    count: int,
    keyless: list[int] | None,
    check_deltas: bool,
    stamps: list[int] | None = None,
    /,
) -> tuple[int, int, int, int, int]: ...
