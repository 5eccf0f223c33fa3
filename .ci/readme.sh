#!/usr/bin/env bash
# The README as a tested path: every ```sh block of README.md and then of the guide's pages
# (docs/guide/, in the README's order), as written, from
# the root of a fresh clone of this checkout's HEAD, in one shell (what one block sets, the
# next sees), with `lwirc` and `cargo run --` meaning the binary given as $1. A line may
# exit non-zero only when its own comment says so (`exit 1 on errors`). A block preceded by
# a line `<!-- not run: WHY -->` is skipped, and WHY is printed (one that needs your model
# server, say). `cargo test` and `cargo install` lines are the test command and the install
# line, which CI runs on their own.
#
# usage: .ci/readme.sh path/to/lwirc
set -uo pipefail
bin=$(realpath "$1")
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git clone -q "$repo" "$scratch/clone"
python3 - "$scratch/clone" > "$scratch/blocks" <<'PY'
import re, sys
root = sys.argv[1]
readme = open(f"{root}/README.md", encoding="utf-8").read()
# The README, then each guide page in the order the README links them.
files = ["README.md"] + list(dict.fromkeys(re.findall(r"\]\((docs/guide/[a-z-]+\.md)\)", readme)))
for name in files:
  lines = open(f"{root}/{name}", encoding="utf-8").read().split("\n")
  block, skip, n, start = None, None, 0, 0
  for i, line in enumerate(lines):
      if block is None:
          if line.startswith("<!-- not run:"):
              skip = line[len("<!-- not run:"):].rstrip("-> ").strip()
          elif line.strip() == "```sh":
              block, start = [], i + 1
          elif line.strip():
              skip = None
      elif line.strip() == "```":
          n += 1
          if skip:
              print(f"#SKIP {name}:{start + 1} {skip}")
          else:
              print(f"#BLOCK {name}:{start + 1}")
              # Continuation lines joined, comments and blank lines left out.
              joined = []
              for l in block:
                  if joined and joined[-1].endswith("\\"):
                      joined[-1] = joined[-1][:-1] + " " + l.strip()
                  else:
                      joined.append(l)
              for l in joined:
                  if l.strip() and not l.lstrip().startswith("#"):
                      print(l)
          block, skip = None, None
      else:
          block.append(line)
PY
cat > "$scratch/prelude" <<EOF2
lwirc() { "$bin" "\$@"; }
cargo() {
    case "\$1" in
        run) shift; [ "\${1:-}" = "--" ] && shift; "$bin" "\$@" ;;
        test | install) echo "(README: \\\`cargo \$1\\\` is run by CI on its own)" ;;
        *) command cargo "\$@" ;;
    esac
}
export USER=\${USER:-alice}
EOF2
cd "$scratch/clone" || exit 1
# One shell for the whole README; each line's status checked against its comment.
{
    cat "$scratch/prelude"
    while IFS= read -r line; do
        case $line in
            "#SKIP "*) rest=${line#\#SKIP }; printf 'echo %q >&2\n' "README: ${rest%% *}: not run: ${rest#* }" ;;
            "#BLOCK "*) echo "readme_line=${line#\#BLOCK }" ;;
            *)
                expected=0
                if [[ $line =~ \#.*exit\ ([0-9]+) ]]; then expected="0|${BASH_REMATCH[1]}"; fi
                quoted=$(printf '%q' "$line")
                printf '%s\n' "$line" "readme_status=\$?" \
                    "case \$readme_status in $expected) ;; *) echo \"README: the block at \$readme_line: \"$quoted\" exited \$readme_status\" >&2; exit 1 ;; esac"
                ;;
        esac
    done < "$scratch/blocks"
    echo 'echo "README: every block ran as written" >&2'
} > "$scratch/script.sh"
bash "$scratch/script.sh" > "$scratch/out" 2> "$scratch/err"
status=$?
if [ $status -ne 0 ]; then
    tail -40 "$scratch/err"
    exit $status
fi
grep '^README' "$scratch/err"
