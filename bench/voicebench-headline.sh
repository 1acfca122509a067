#!/usr/bin/env bash
# Copies the headline of bench/RESULTS-voicebench.md (what make bench-full
# measured: its machine, command and the table of issue 9's goals) into
# bench/RESULTS.md, between the lines
#   <!-- begin bench-full headline (bench/voicebench-headline.sh) -->
#   <!-- end bench-full headline -->
# so that the project's results file always shows the latest comparison.
# Run by bench/voicebench-full.sh after it writes RESULTS-voicebench.md.
set -euo pipefail
cd "$(dirname "$0")/.."
src=bench/RESULTS-voicebench.md
dst=bench/RESULTS.md
begin='<!-- begin bench-full headline (bench/voicebench-headline.sh) -->'
end='<!-- end bench-full headline -->'
if ! grep -qxF "$begin" "$dst" || ! grep -qxF "$end" "$dst"; then
  echo "voicebench-headline: $dst has no headline markers; left as it is" >&2
  exit 0
fi
block=$(mktemp)
trap 'rm -f "$block" "$dst.new"' EXIT
{
  echo
  # The two paragraphs that name the run, its machine and its command.
  awk '/^Measured by `make bench-full`/ { p = 1 } p { print } p && /^$/ && ++n == 2 { exit }' "$src"
  # The headline's table and sentences, up to the next section.
  awk '/^## Headline/ { h = 1; next } h && /^## / { exit } h' "$src" | sed '1{/^$/d}'
  echo "Every table of that run, its command lines and perf profiles: [RESULTS-voicebench.md](RESULTS-voicebench.md)."
  echo
} >"$block"
awk -v begin="$begin" -v end="$end" -v blockfile="$block" '
  $0 == begin { print; while ((getline line < blockfile) > 0) print line; skip = 1; next }
  $0 == end { skip = 0 }
  !skip { print }' "$dst" >"$dst.new"
mv "$dst.new" "$dst"
echo "voicebench-headline: copied the headline of $src into $dst" >&2
