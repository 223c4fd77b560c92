"""The protobuf wire format written and walked by hand (no generated code, no protobuf library): the one
home of its varints and fields for the scripts that write and count the protobuf samples,
xplane/xplane_counts.py and perfetto/perfetto_counts.py (each imports it from this folder). The
encoding is protobuf's (protobuf.dev/programming-guides/encoding): a field is a varint key
(number << 3 | wire type), then a varint (0), 8 bytes (1), a varint length and that many bytes (2),
or 4 bytes (5).
"""


def varint(v):
    """The varint of `v` (a negative one as its 64-bit two's complement, ten bytes)."""
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def len_field(n, b):
    """Field `n` holding the bytes `b` (a str is written as UTF-8)."""
    if isinstance(b, str):
        b = b.encode()
    return varint(n << 3 | 2) + varint(len(b)) + b


def read_varint(b, i):
    """The varint at offset `i` of `b` and the offset after it."""
    value, shift = 0, 0
    while True:
        x = b[i]
        i += 1
        value |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return value, i


def fields(b):
    """(offset of the field, field number, value): an int for a varint, bytes for the others."""
    i = 0
    while i < len(b):
        start = i
        key, i = read_varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(b, i)
        elif wire in (1, 2, 5):
            if wire == 2:
                n, i = read_varint(b, i)
            else:
                n = 8 if wire == 1 else 4
            value = b[i:i + n]
            if len(value) != n:
                raise ValueError(f"the field at byte {start} runs past the end")
            i += n
        else:
            raise ValueError(f"wire type {wire} at byte {start}")
        yield start, number, value


def grouped(b):
    """The fields of a message by number, each number's values in order."""
    out = {}
    for _, n, v in fields(b):
        out.setdefault(n, []).append(v)
    return out
