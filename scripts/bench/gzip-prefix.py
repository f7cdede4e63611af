"""The body the wrk script (post-gzip-reports.lua) sends: REPORT compressed once into OUT, a gzip
header and a deflate stream ended by a sync flush (not final), which the wrk script completes
with a distinct stored block per request. Prints the report's CRC-32 and length, which the
gzip trailer of each request needs.

    python3 scripts/bench/gzip-prefix.py REPORT OUT
"""
import sys
import zlib

data = open(sys.argv[1], "rb").read()
c = zlib.compressobj(6, zlib.DEFLATED, -15)
body = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
open(sys.argv[2], "wb").write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + body)
print(zlib.crc32(data), len(data))
