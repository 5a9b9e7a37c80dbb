#!/bin/sh
# Creates the `default` namespace and Keel's search attributes (docs/architecture.md#visibility); idempotent.
set -eu
temporal operator namespace describe --namespace default >/dev/null 2>&1 || temporal operator namespace create --namespace default --retention 7d
for a in KeelStatus:Keyword KeelModel:Keyword KeelTurns:Int KeelCostUsd:Double KeelForkedFrom:Keyword; do
  temporal operator search-attribute create --namespace default --name "${a%%:*}" --type "${a##*:}" 2>/dev/null || true
done
attrs=$(temporal operator search-attribute list --namespace default)
for n in KeelStatus KeelModel KeelTurns KeelCostUsd KeelForkedFrom; do echo "$attrs" | grep -q "$n" || { echo "missing search attribute $n"; exit 1; }; done
