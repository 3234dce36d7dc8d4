#!/bin/bash
# Checks the man page and the shell completions the build made from the wrapper's two tables of flags
# (src/config/options.def, tools/cuda-blockrun/commands.def): groff (else mandoc) reads the page without a warning,
# bash and zsh parse the completions, every listed flag of both tables is in the page and in the bash
# completion, and the bash completion offers the right words. A checker that is not installed is skipped
# with a message saying so; the others still run.
set -u
man_page=$1
bash_completion=$2
zsh_completion=$3
source_dir=$4
status=0
fail() { echo "FAIL: $*"; status=1; }

if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$man_page" 2>&1)
  [ -z "$warnings" ] || fail "groff -man -ww warns about $man_page: $warnings"
elif command -v mandoc >/dev/null; then
  warnings=$(mandoc -T lint "$man_page" 2>&1)
  [ -z "$warnings" ] || fail "mandoc -T lint warns about $man_page: $warnings"
else
  echo "skipped: the man page's roff is not checked (neither groff nor mandoc is installed)"
fi
bash -n "$bash_completion" || fail "bash cannot parse $bash_completion"
if command -v zsh >/dev/null; then
  zsh -n "$zsh_completion" || fail "zsh cannot parse $zsh_completion"
else
  echo "skipped: the zsh completion is not parsed (zsh is not installed)"
fi

# The listed flags, read from the tables themselves.
flags=$( (sed -n 's/^CUDA_BLOCKRUN_OPTION([^,]*, *[^,]*, *"[^"]*", *"\(--[^"]*\)".*/\1/p' "$source_dir/src/config/options.def"
          sed -n 's/^CUDA_BLOCKRUN_COMMAND([^,]*, *"\(--[^"]*\)", *"[^"]*", *"[^"]*", *[A-Za-z]*, *Listed,.*/\1/p' \
            "$source_dir/tools/cuda-blockrun/commands.def") | sort)
[ "$(echo "$flags" | wc -l)" -ge 20 ] || fail "read only $(echo "$flags" | wc -l) flags from the tables"
page=$(sed 's/\\-/-/g' "$man_page")
for flag in $flags; do
  case $page in *"\\fB$flag\\fR"*) ;; *) fail "$flag is not in the man page's options" ;; esac
  grep -q -- "[' |]$flag[' |)]" "$bash_completion" || fail "$flag is not in the bash completion"
done
for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT '"EXIT STATUS"' EXAMPLES '"SEE ALSO"'; do
  grep -qx "\.SH $section" "$man_page" || fail "the man page has no section $section"
done
for variable in $(sed -n 's/^CUDA_BLOCKRUN_OPTION([^,]*, *[^,]*, *"\([A-Z_]*\)".*/\1/p' "$source_dir/src/config/options.def"); do
  grep -qx "\.B $variable" "$man_page" || fail "ENVIRONMENT lacks $variable"
done

# What the bash completion offers: flags for a prefix, a Choice's words, report's flag.
# shellcheck source=/dev/null
source "$bash_completion"
offered() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _cuda_blockrun 2>/dev/null
  echo "${COMPREPLY[*]}"
}
[ "$(offered cuda-blockrun --breadc)" = "--breadcrumbs --breadcrumb-every" ] ||
  fail "--breadc completes to '$(offered cuda-blockrun --breadc)'"
[ "$(offered cuda-blockrun --breadcrumb-every "")" = "1 2 4 8 16 32 64" ] ||
  fail "--breadcrumb-every completes to '$(offered cuda-blockrun --breadcrumb-every "")'"
[ "$(offered cuda-blockrun --callsites "")" = "auto all none" ] ||
  fail "--callsites completes to '$(offered cuda-blockrun --callsites "")'"
[ "$(offered cuda-blockrun --callsites = a)" = "auto all" ] ||
  fail "--callsites=a completes to '$(offered cuda-blockrun --callsites = a)'"
[ "$(offered cuda-blockrun report --j)" = "--json" ] || fail "report --j completes to '$(offered cuda-blockrun report --j)'"
# `report` itself, and every flag of report_flags.def after it (issue 42: --trace and --force were not offered).
case " $(offered cuda-blockrun rep) " in *" report "*) ;; *) fail "rep does not complete to report" ;; esac
report_flags=$(sed -n 's/^CUDA_BLOCKRUN_REPORT_FLAG([^,]*, *"\(--[^"]*\)".*/\1/p' \
                 "$source_dir/tools/cuda-blockrun/report_flags.def" | tr '\n' ' ')
case $report_flags in *--trace*--force*) ;; *) fail "read '$report_flags' from report_flags.def" ;; esac
[ "$(offered cuda-blockrun report --) " = "$report_flags" ] ||
  fail "report -- completes to '$(offered cuda-blockrun report --)', not '$report_flags'"
case " $(offered cuda-blockrun report --json --trace "$source_dir/READ") " in *"/README.md "*) ;;
  *) fail "report --trace offers no file" ;; esac
for flag in $report_flags; do
  case $page in *"\\fB$flag\\fR"*) ;; *) fail "report's $flag is not in the man page" ;; esac
  sed -n '/} == report ]]/,/return/p' "$zsh_completion" | grep -qF -e "$flag[" -e "$flag=" ||
    fail "report's $flag is not in the zsh completion"
done
grep -q '^\.RB \[ \\-\\-force \]$' "$man_page" || fail "the man page's SYNOPSIS lacks report's --force"
[ "$(offered cuda-blockrun --block all -- ./app --callsi)" != "--callsites" ] ||
  fail "the program's own arguments were completed as the wrapper's flags"
[ $status -eq 0 ] && echo "ok: $(echo "$flags" | wc -l) flags in the man page and the bash completion; both parse"
exit $status
# SPDX-License-Identifier: MIT
