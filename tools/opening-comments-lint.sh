#!/usr/bin/env bash
# Every source file of the engine and the server opens with a comment that says its one job
# (docs/ARCHITECTURE.md, "Rules the layout keeps"). Lists the files that do not; exit 1 if any.
# Usage: tools/opening-comments-lint.sh [ROOT]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
missing=0
while IFS= read -r f; do
  first=$(head -n 1 "$f")
  case "$first" in
    //*|/\**) ;;
    *) echo "opening-comments-lint: $f does not open with a comment saying its job"; missing=1 ;;
  esac
done < <(find common server -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) | sort)
[ "$missing" = 0 ] && echo "opening-comments-lint: every file in common/ and server/ says its job"
exit "$missing"
