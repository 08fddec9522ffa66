#!/usr/bin/env bash
# Regenerates the HAR test data of package har:
#   mitmproxy.har         written by mitmproxy's hardump addon (mitmdump in reverse mode in
#                         front of ./backend), for the requests of requests.jsonl plus two
#                         non-AHP requests (GET /health, a form POST to /login)
#   mitmproxy-base64.har  the same file with every request and response body base64-encoded
#   session.capture       the same AHP requests sent through `ahp-tap http --capture` instead
# Needs Go, curl, python3 and mitmproxy (Debian: apt-get install mitmproxy). Loopback only.
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
hardump=${HARDUMP:-/usr/share/doc/mitmproxy/examples/contrib/har_dump.py}
token=har-test-token-0123456789 # a made-up bearer token: AUTH-1 must find it, nothing may print it
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
await_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "nothing listens on $1" >&2; exit 1; }
post_all() { # post_all BASEURL: every line of requests.jsonl, as a harness would
	while IFS= read -r line; do
		curl -sS -o /dev/null -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $token" \
			--data-binary "$line" "$1/agent-hooks"
	done <requests.jsonl
}

go build -o "$tmp/ahp-tap" "$repo/cmd/ahp-tap"
go build -o "$tmp/backend" ./backend
pb=$(port); pm=$(port); pt=$(port)
"$tmp/backend" --listen "127.0.0.1:$pb" & pids+=($!)
await_port "$pb"

# 1. The HAR: client -> mitmdump (reverse proxy, hardump addon) -> backend.
mitmdump -q --mode "reverse:http://127.0.0.1:$pb" --listen-host 127.0.0.1 --listen-port "$pm" \
	-s "$hardump" --set hardump="$tmp/mitmproxy.har" & mpid=$!
await_port "$pm"
curl -sS -o /dev/null "http://127.0.0.1:$pm/health"
post_all "http://127.0.0.1:$pm"
curl -sS -o /dev/null -d 'user=dev&remember=1' "http://127.0.0.1:$pm/login"
kill -INT "$mpid"; wait "$mpid" || true # hardump writes the file at shutdown

# 2. The equivalent capture: client -> ahp-tap http -> backend.
"$tmp/ahp-tap" http --listen "127.0.0.1:$pt" --upstream "http://127.0.0.1:$pb" --capture "$tmp/session.capture" 2>/dev/null & tpid=$!
await_port "$pt"
post_all "http://127.0.0.1:$pt"
kill -TERM "$tpid"; wait "$tpid" || true

python3 - "$tmp/mitmproxy.har" <<'PY'
import base64, json, sys
har = json.load(open(sys.argv[1]))
for e in har["log"]["entries"]:
    c = e["response"]["content"]
    if "text" in c and c.get("encoding") != "base64":
        c["text"], c["encoding"] = base64.b64encode(c["text"].encode()).decode(), "base64"
    p = e["request"].get("postData")
    if p and "text" in p:
        # Not in HAR 1.2 for postData, but written by some exporters; ahp-tap reads it.
        p["text"], p["encoding"] = base64.b64encode(p["text"].encode()).decode(), "base64"
json.dump(har, open("mitmproxy-base64.har", "w"), indent=2)
PY
cp "$tmp/mitmproxy.har" mitmproxy.har
cp "$tmp/session.capture" session.capture
chmod 0644 mitmproxy.har mitmproxy-base64.har session.capture
echo "wrote $(pwd)/{mitmproxy.har,mitmproxy-base64.har,session.capture}"
