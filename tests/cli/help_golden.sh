#!/usr/bin/env bash
# Every verb's --help against tests/cli/golden/help/ (the command's options are a contract; a change
# to one shows here). KGATE_UPDATE_GOLDEN=1 writes them anew.
# Usage: help_golden.sh KGATE SOURCE_DIR
set -u
kgate=$1
golden=$2/tests/cli/golden/help
status=0
for verb in "" list check replay validate pack merge compare calibrate sweep; do
  name=${verb:-kgate}
  # The usage line names the binary as it was called: the path is not the contract.
  text=$("$kgate" $verb --help 2>&1 | sed "s#^Usage: [^ ]*kgate#Usage: kgate#")
  if [ "${KGATE_UPDATE_GOLDEN:-0}" = 1 ]; then
    printf '%s\n' "$text" > "$golden/$name.txt"
  elif ! diff -u "$golden/$name.txt" <(printf '%s\n' "$text") > /tmp/kgate-help-$$.diff; then
    echo "FAIL: 'kgate $verb --help' differs from $golden/$name.txt:"
    cat /tmp/kgate-help-$$.diff
    status=1
  fi
done
rm -f /tmp/kgate-help-$$.diff
[ $status -eq 0 ] && echo "PASS: every verb's --help matches its golden"
exit $status
