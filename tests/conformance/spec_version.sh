#!/usr/bin/env bash
# The protocol version is stated in places that must agree: kProtocolVersion in the code, the
# schema's first line, docs/PROTOCOL.md's "Protocol version: N" line, and every MUST and refusal
# the spec states about a JoinRequest's protocol_version.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SPEC=$ROOT/docs/PROTOCOL.md
code=$(sed -n 's/.*kProtocolVersion = \([0-9]*\);.*/\1/p' "$ROOT/common/core/include/lockstep/version.hpp")
schema=$(sed -n '1s/.*wire protocol, version \([0-9]*\).*/\1/p' "$ROOT/schemas/messages.fbs")
spec=$(sed -n 's/^Protocol version: \([0-9]*\).*/\1/p' "$SPEC" | head -1)
echo "kProtocolVersion $code, schema $schema, docs/PROTOCOL.md $spec"
[ -n "$code" ] && [ "$code" = "$schema" ] && [ "$code" = "$spec" ] || { echo "FAIL: the protocol versions disagree"; exit 1; }
# "`protocol_version` u32: MUST be N" and "`protocol_version` ≠ N" (the refusal table): each N
# the code's version, and at least one of each stated.
musts=$(grep -o '`protocol_version` u32: MUST be [0-9]*' "$SPEC" | grep -o '[0-9]*$')
refusals=$(grep -o '`protocol_version` ≠ [0-9]*' "$SPEC" | grep -o '[0-9]*$')
[ -n "$musts" ] && [ -n "$refusals" ] || { echo "FAIL: PROTOCOL.md states no MUST or refusal for protocol_version"; exit 1; }
for n in $musts $refusals; do
  [ "$n" = "$code" ] || { echo "FAIL: PROTOCOL.md states protocol_version $n where the code speaks $code"; exit 1; }
done
echo "PASS: one protocol version, $code ($(echo $musts $refusals | wc -w) statements of it checked)"
