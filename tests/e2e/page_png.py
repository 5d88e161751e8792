"""The PNG screenshots Chromium writes, read for the tests' checks of what a page shows (Python's
standard library only): the chunks, and the pixels of an 8-bit RGB or RGBA image."""
import struct
import zlib


def read(path):
    """(width, height, bit depth, colour type, the image data: filtered rows, decompressed)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG file"
    pos, idat, header = 8, b"", (0, 0, 0, 0)
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return (*header, zlib.decompress(idat))


def rgb_rows(path):
    """Each row of an 8-bit RGB or RGBA PNG as a list of (r, g, b), its filters undone."""
    w, h, depth, colour, raw = read(path)
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 3 if colour == 2 else 4
    stride = w * bpp
    prev = bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        yield [(line[x], line[x + 1], line[x + 2]) for x in range(0, stride, bpp)]
        prev = line
