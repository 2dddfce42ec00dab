#!/usr/bin/env bash
# Start PostgreSQL and Redis on this machine if they are installed but not answering.
# Tests of the PostgreSQL store and the Redis bus need them; they skip (outside CI) without them.
set -u

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if command -v pg_ctlcluster >/dev/null 2>&1 && ! pg_up; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
if pg_up; then
  # The `test` database the suite uses; trust auth on loopback.
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" 2>/dev/null | grep -q 1 \
    || createdb -h 127.0.0.1 -U postgres test 2>/dev/null || true
fi
if command -v redis-server >/dev/null 2>&1 && ! redis_up; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
fi
pg_up && echo "PostgreSQL: up" || echo "PostgreSQL: not available (its tests will skip outside CI)"
redis_up && echo "Redis: up" || echo "Redis: not available (its tests will skip outside CI)"
exit 0
