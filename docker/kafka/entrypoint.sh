#!/bin/bash
# Honours the environment contract of the official apache/kafka image so either
# image can be used: every KAFKA_<NAME> variable becomes a server property, with
# '_' -> '.', '__' -> '_' and '___' -> '-', and CLUSTER_ID formats the storage.
set -euo pipefail

# cluster.storage = writeback: kt-lazyfs mounts its write-back view of the backing
# volume over the data directory and runs this script again as its child, so a
# crash command (lose-unfsynced) can kill the broker and keep the filesystem.
if [[ "${KT_STORAGE:-plain}" == writeback && -z "${KT_LAZYFS_CHILD:-}" ]]; then
  export KT_LAZYFS_CHILD=1
  exec /opt/kafka/bin/kt-lazyfs run --backing /var/lib/kafka/backing \
    --mount /var/lib/kafka/data --socket /run/kt-lazyfs.sock \
    ${KT_LAZYFS_DIRTY_LIMIT:+--dirty-limit "$KT_LAZYFS_DIRTY_LIMIT"} -- "$0" "$@"
fi

: "${CLUSTER_ID:?CLUSTER_ID must be set (any 22-character base64 UUID)}"
conf=/opt/kafka/config/server.properties
: > "$conf"

# Variables that configure the JVM rather than the broker, as in the official image.
skip='^KAFKA_(HEAP_OPTS|OPTS|JVM_PERFORMANCE_OPTS|LOG4J_OPTS|GC_LOG_OPTS|JMX_OPTS|DEBUG|VERSION|HOME)$'

while IFS='=' read -r name value; do
  [[ "$name" =~ ^KAFKA_ ]] || continue
  [[ "$name" =~ $skip ]] && continue
  prop=$(printf '%s' "${name#KAFKA_}" | tr '[:upper:]' '[:lower:]' \
    | sed -e 's/___/-/g' -e 's/__/\x01/g' -e 's/_/./g' -e 's/\x01/_/g')
  printf '%s=%s\n' "$prop" "$value" >> "$conf"
done < <(env)

grep -q '^log.dirs=' "$conf" || echo "log.dirs=/var/lib/kafka/data" >> "$conf"

cp=/opt/kafka/libs/*
java -cp "$cp" kafka.tools.StorageTool format \
  --cluster-id="$CLUSTER_ID" --config "$conf" --ignore-formatted

# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m} ${KAFKA_OPTS:-} \
  -XX:+UseG1GC -Djava.awt.headless=true \
  -Dorg.slf4j.simpleLogger.showDateTime=true \
  -Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
  -cp "$cp" kafka.Kafka "$conf"
