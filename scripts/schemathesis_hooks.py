"""schemathesis hooks for `make test-api` (scripts/test-api.sh loads them via SCHEMATHESIS_HOOKS).

Remote workers' claims travel as `application/x-stackline-frames` (docs/workers.md): each frame
a 4-byte big-endian length and that many bytes. schemathesis cannot make such a body from the
document's `format: binary`, so this teaches it: random bytes, bundles of random frames, and
bundles whose first frame is a well-formed ClaimRequest (for a worker the server does not know).
"""
import json
import struct

import schemathesis
from hypothesis import strategies as st


def bundle(frames):
    return b"".join(struct.pack(">I", len(frame)) + frame for frame in frames)


claim = st.fixed_dictionaries({
    "waitSeconds": st.sampled_from([0, 0.1]),
    "maxJobs": st.integers(min_value=-2, max_value=40),
    "status": st.fixed_dictionaries({
        "busy": st.integers(min_value=-1, max_value=4),
        "cacheBytes": st.integers(min_value=0, max_value=1 << 40),
        "fetches": st.integers(min_value=0, max_value=10),
    }),
    "added": st.lists(st.text(alphabet="0123456789abcdef", max_size=40), max_size=3),
    "removed": st.just([]),
    "results": st.just([]),
}).map(lambda message: json.dumps(message).encode())

schemathesis.openapi.media_type(
    "application/x-stackline-frames",
    st.one_of(
        st.binary(max_size=64),
        st.lists(st.binary(max_size=32), max_size=3).map(bundle),
        claim.map(lambda envelope: bundle([envelope])),
    ),
)
