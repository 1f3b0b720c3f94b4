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
# The storage tool, with --ignore-formatted, formats only directories that hold no
# meta.properties. Every restart ran it all the same, a JVM that loads Kafka's classes
# for nothing (about 2 s of a core each time): a directory that has one is skipped
# here as it would be there.
formatted=1
dirs=$(sed -n -e 's/^log\.dirs=//p' -e 's/^metadata\.log\.dir=//p' "$conf" | tr ',' ' ')
for d in $dirs; do
  [[ -f "$d/meta.properties" ]] || formatted=0
done
# cluster.quorum = dynamic (KIP-853): every node formats with the same initial voter
# set, its own directory id taken from its entry there. A node put back with empty
# storage in place of a decommissioned one (the file below, left by kafka-trial) is a
# new replica of the quorum instead: a fresh directory id, an observer until it is
# added as a voter, as KIP-853 has a replaced disk join.
quorum=()
if [[ -n "${KT_INITIAL_CONTROLLERS:-}" ]]; then
  quorum=(--initial-controllers "$KT_INITIAL_CONTROLLERS")
fi
new_replica=""
for d in $dirs; do
  [[ -f "$d/kt-new-replica" ]] && new_replica="$d/kt-new-replica"
done
if [[ -n "$new_replica" && ${#quorum[@]} -gt 0 ]]; then
  quorum=(--no-initial-controllers)
fi
if [[ $formatted == 0 ]]; then
  java -cp "$cp" kafka.tools.StorageTool format \
    --cluster-id="$CLUSTER_ID" --config "$conf" --ignore-formatted "${quorum[@]}"
fi
[[ -z "$new_replica" ]] || rm -f "$new_replica"

# cluster.clock = faketime: the broker's JVM alone reads a wall clock offset by what
# the file says (a clock fault rewrites it; it outlives a restart, as a host's skew
# would). Measured in this image with Java 17 and Debian's libfaketime 0.9.10:
# - the multi-threaded library, and the monotonic clock left real, for the JVM's
#   timers and sleeps;
# - FAKETIME_FORCE_MONOTONIC_FIX=0: with the fix that 0.9.10 turns on for this glibc,
#   Object.wait(200) and parkNanos returned at once, every timed wait a busy loop, and
#   the brokers never formed their quorum;
# - the file read again once a second, not on every call: FAKETIME_NO_CACHE costs
#   ~64 us a clock read (0.7 us cached, 0.03 us without the library).
if [[ "${KT_CLOCK:-real}" == faketime ]]; then
  [[ -s /run/kt-faketime ]] || echo "+0" > /run/kt-faketime
  export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 \
    FAKETIME_TIMESTAMP_FILE=/run/kt-faketime FAKETIME_CACHE_DURATION=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0
fi

# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m} ${KAFKA_OPTS:-} \
  -XX:+UseG1GC -Djava.awt.headless=true \
  -Dorg.slf4j.simpleLogger.showDateTime=true \
  "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
  -cp "$cp" kafka.Kafka "$conf"
