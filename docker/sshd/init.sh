#!/bin/bash
# PID 1 of a test-double node: sshd, not the JVM, so that killing the broker (the
# harness's crash faults) leaves the container, its network namespace and its
# iptables and tc state as a real machine would keep them.
set -euo pipefail

mkdir -p /etc/kt /root/.ssh /run/sshd /var/log/kafka

# An SSH session starts from sshd's own environment, not the container's: the
# broker's settings are saved where `broker start` reads them. The key is left out,
# it is not the broker's business.
: > /etc/kt/broker.env
while IFS= read -r name; do
  if [[ "$name" =~ ^(KAFKA_|KT_|CLUSTER_ID$) && "$name" != KT_AUTHORIZED_KEYS ]]; then
    declare -p "$name" >> /etc/kt/broker.env
  fi
done < <(compgen -e)
chmod 0600 /etc/kt/broker.env

if [[ -n "${KT_AUTHORIZED_KEYS:-}" ]]; then
  printf '%s\n' "$KT_AUTHORIZED_KEYS" > /root/.ssh/authorized_keys
elif [[ -f /etc/kt/authorized_keys ]]; then
  cp /etc/kt/authorized_keys /root/.ssh/authorized_keys
else
  echo "init: no KT_AUTHORIZED_KEYS and no /etc/kt/authorized_keys: nobody can log in" >&2
fi
[[ -f /root/.ssh/authorized_keys ]] && chmod 0600 /root/.ssh/authorized_keys
unset KT_AUTHORIZED_KEYS

ssh-keygen -A >/dev/null

/opt/kt/broker start
# sshd reaps every child it did not start too (waitpid(-1)), so a JVM killed after
# its SSH session ended does not stay a zombie.
exec /usr/sbin/sshd -D -e
