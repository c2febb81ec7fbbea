#!/bin/sh
# one ensemble member: $1 the shared scratch, $2 the member (rank)
set -e
printf "member %s on %s: %s\n" "$2" "$AZ_BATCH_NODE_ID" "$(head -c 14 run/namelist.input)" > "$1/member-$2.out"
