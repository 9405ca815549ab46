#!/usr/bin/env bash
# The first owner's one-time setup token, without a Rust toolchain: what
# `tally setup-token` stores, written with the AWS CLI.
#
#   infra/scripts/setup-token.sh TABLE [REGION]
#
# Prints the token (`tsu_` and 40 hex digits). Open the stack's ConsoleUrl
# and create the first owner with it: it works once, within 24 hours, and
# only while the instance has no owner. Only the token's SHA-256 is stored
# (`INSTANCE` / `SETUP#{sha256}`), expiring by TTL.
set -euo pipefail
table=${1:?usage: setup-token.sh TABLE [REGION]}
region=${2:-}

token="tsu_$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
hash=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
now=$(($(date +%s) * 1000))
expires=$((now + 86400000))
ttl=$((expires / 1000 + 1))
item=$(printf '{"pk":{"S":"INSTANCE"},"sk":{"S":"SETUP#%s"},"hash":{"S":"%s"},"created":{"N":"%s"},"expires":{"N":"%s"},"ttl":{"N":"%s"}}' \
  "$hash" "$hash" "$now" "$expires" "$ttl")

aws dynamodb put-item --table-name "$table" ${region:+--region "$region"} --item "$item" >/dev/null
echo "$token"
