#!/usr/bin/env bash
# The protocol version is stated in three places that must agree: kProtocolVersion in the code,
# the schema's first line, and docs/PROTOCOL.md's "Protocol version: N" line.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
code=$(sed -n 's/.*kProtocolVersion = \([0-9]*\);.*/\1/p' "$ROOT/common/core/include/lockstep/version.hpp")
schema=$(sed -n '1s/.*wire protocol, version \([0-9]*\).*/\1/p' "$ROOT/schemas/messages.fbs")
spec=$(sed -n 's/^Protocol version: \([0-9]*\).*/\1/p' "$ROOT/docs/PROTOCOL.md" | head -1)
echo "kProtocolVersion $code, schema $schema, docs/PROTOCOL.md $spec"
[ -n "$code" ] && [ "$code" = "$schema" ] && [ "$code" = "$spec" ] || { echo "FAIL: the protocol versions disagree"; exit 1; }
echo "PASS: one protocol version, $code"
